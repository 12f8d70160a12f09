"""YAML files read as OmegaConf reads them (``OmegaConf.load``, resolved to plain containers), by libyaml's C parser
where yaml has one: `list` reads every artifact file, and OmegaConf's pure-Python reader and tree took most of its
time. The C reader keeps OmegaConf's rules (its float syntax such as ``1e-3``, no timestamps, a duplicate key is an
error); a file with an interpolation (``${...}``) or one the C reader refuses is read by OmegaConf, which also names
the problem as it always did."""

from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf
from omegaconf._utils import get_yaml_loader

OMEGACONF_LOADER = get_yaml_loader()


C_LOADER = None  # without libyaml, OmegaConf reads every file
if yaml.__with_libyaml__:
    from yaml.cyaml import CParser

    class C_LOADER(CParser, OMEGACONF_LOADER):  # noqa: N801 (None above)
        """OmegaConf's loader (its resolvers, constructors and duplicate-key check) on libyaml's parser, set up as
        ``yaml.CSafeLoader`` is."""

        def __init__(self, stream):
            CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)


def read_yaml(path: Path) -> Any:
    """What the file holds, as ``OmegaConf.to_container(OmegaConf.load(path), resolve=True)`` gives it (OSError,
    UnicodeDecodeError, yaml.YAMLError or an OmegaConf error where it cannot)."""
    text = path.read_text(encoding="utf-8")
    if "${" not in text and C_LOADER is not None:
        try:
            return yaml.load(text, Loader=C_LOADER)
        except yaml.YAMLError:
            pass  # OmegaConf's reader names the problem
    return OmegaConf.to_container(OmegaConf.load(path), resolve=True)
