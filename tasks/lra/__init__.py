"""The Long Range Arena (Tay et al. 2021; the xLSTM paper's Appendix B.1.3, Table lra_test_accuracy): ListOps,
Retrieval (AAN), Image (CIFAR-10, grey and RGB) and Pathfinder-32, each one class per sequence.

Readers take the release's files (listops_reader, retrieval_reader, cifar_reader, pathfinder_reader) and raise
ReleaseFormatError naming the file and line on malformed input; generators (listops_generator, pathfinder_generator,
retrieval_generator: pairs of windows of the offline corpus's documents, image_generator: ten shapes in CIFAR-10's
format) let every task run without the release; sets lays samples out as batches; data serves them to
Lightning; the *_config modules are the torch-free schemas of the task configs.
"""

from tasks.lra.image_config import ImageTaskConfig
from tasks.lra.listops_config import ListOpsTaskConfig
from tasks.lra.pathfinder_config import PathfinderTaskConfig
from tasks.lra.release_format import ReleaseFormatError
from tasks.lra.retrieval_config import RetrievalTaskConfig

__all__ = ["ImageTaskConfig", "ListOpsTaskConfig", "PathfinderTaskConfig", "ReleaseFormatError", "RetrievalTaskConfig"]
