"""Type stubs of rlprof's torch operator hook extension (python/src/torch_module.cc)."""
from typing import Any, Dict

def stats() -> Dict[str, Any]: ...
