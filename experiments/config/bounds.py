"""The largest value of each kind of count in a run config: values a run can still reach, an order of magnitude or
more beyond the paper's largest, so that a typo (a 30-digit max_steps, a batch of a billion) is refused before
anything runs instead of training until killed. Field metadata in the style of experiments.config.config_schema;
task families state the same bounds as literals (tasks import nothing from experiments).
"""

# 600,000 optimizer steps is the longest run of the configs (the paper's 300B-token runs take about 286,000)
MAX_STEPS = 10_000_000
# sequences per optimizer step: the configs' largest is 2,048; more is reached by accumulating micro-batches
MAX_BATCH = 65_536
# tokens (or pixels) per sequence: the paper's longest is 16,384 (Path-X, context extrapolation); 2^20 still fits
# a recurrent model run chunk by chunk
MAX_LENGTH = 1_048_576
# sequences (or documents) of a data set: the configs' largest is 160,000
MAX_SAMPLES = 10_000_000
# tokens an evaluation reads: 10 billion, a day at 100,000 tokens per second
MAX_EVALUATED_TOKENS = 10_000_000_000
# torch and numpy seeds are 32-bit (Lightning's seed_everything refuses larger ones)
MAX_SEED = 2**32 - 1
# model width and depth: the paper's largest model is 2,560 wide and 48 blocks deep (GPT-3 175B: 12,288 and 96)
MAX_EMBEDDING_DIM = 32_768
MAX_BLOCKS = 1_024
# processes and threads: devices of one node, nodes of a job, intra-op threads of one process
MAX_DEVICES = 64
MAX_NODES = 4_096
MAX_THREADS = 1_024
# memory a generation may use, in MiB (16 TiB)
MAX_MEMORY_MIB = 16_777_216

STEPS = {"at_least": 1, "at_most": MAX_STEPS}
STEPS_FROM_ZERO = {"at_least": 0, "at_most": MAX_STEPS}
BATCH = {"at_least": 1, "at_most": MAX_BATCH}
LENGTH = {"at_least": 1, "at_most": MAX_LENGTH}
SAMPLES = {"at_least": 1, "at_most": MAX_SAMPLES}
EVALUATED_TOKENS = {"at_least": 1, "at_most": MAX_EVALUATED_TOKENS}
SEED = {"at_least": 0, "at_most": MAX_SEED}
# learning rates, Adam's eps and weight decay act on the weights in their precision, float32 at most: above its largest
# number they are infinite there (a run at lr 1e30 trains, and diverges at once: the divergence tests' way)
MAX_FLOAT32 = 3.4028234663852886e38
RATE = {"above": 0, "at_most": MAX_FLOAT32}
NOT_NEGATIVE_RATE = {"at_least": 0, "at_most": MAX_FLOAT32}
# a gradient norm no run reaches short of diverging (null switches clipping off)
CLIP_NORM = {"at_least": 0, "at_most": 1_000_000}
# the fakes of the sweep runner's tests sleep at most an hour
SLEEP_SECONDS = {"at_least": 0, "at_most": 3_600}
