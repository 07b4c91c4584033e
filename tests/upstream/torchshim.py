"""Lets Megatron-LM's argument code import on an old CPU PyTorch (Debian's python3-torch 1.13).

Only modules that do not exist in the installed torch (torch-2.x-only submodules such as
torch.distributed.checkpoint, torch.distributed._tensor) and a few optional packages are replaced
by permissive stubs; everything that exists is the real module. Argument parsing and validation do
not call into the stubbed modules; the stubs only satisfy import-time references (base classes,
decorators, type hints).
"""
import importlib.abc
import importlib.machinery
import sys
import types

STUB_PREFIXES = ("torch.",)
STUB_PACKAGES = set()  # optional top-level packages to stub when missing (install(extra_packages))
# Present in Debian's torch 1.13 but broken on Python 3.11 (a dataclass with a mutable default
# raises at import): always stubbed.
FORCED = ("torch.distributed._shard", "torch.distributed._sharded_tensor")


class _StubMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name)

    def __getitem__(cls, item):
        return cls

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls


class _StubBase(metaclass=_StubMeta):
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # used as a decorator
        return self

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name)()

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False


def _stub_class(name):
    return _StubMeta(name, (_StubBase,), {"__module__": "torchshim"})


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _stub_class(name)
        setattr(self, name, value)
        return value

    # A missing class imported as a "submodule" (from torch.cuda import MemPool) is used in type
    # hints (MemPool | None), subscripted or called.
    def __or__(self, other):
        return self

    def __ror__(self, other):
        return self

    def __getitem__(self, item):
        return self

    def __call__(self, *args, **kwargs):
        return _StubBase()


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        m = _StubModule(spec.name)
        m.__path__ = []  # a package, so sub-imports work too
        m.__torchshim__ = True
        m.__version__ = "0.0.0"  # older than anything a version check asks for
        return m

    def exec_module(self, module):
        pass


class _StubFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        top = fullname.split(".")[0]
        if fullname.startswith(FORCED):
            stubbed.append(fullname)
            return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)
        if not (fullname.startswith(STUB_PREFIXES) or top in STUB_PACKAGES):
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            try:
                spec = finder.find_spec(fullname, path, target)
            except Exception:
                spec = None
            if spec is not None:
                return None  # the real module exists: use it
        stubbed.append(fullname)
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


stubbed = []


# torch attributes of 2.x that module-level code reads (dtype tables, decorators).
TORCH_ATTRS = ("float8_e8m0fnu", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
               "uint16", "uint32", "uint64", "compiler", "library", "compile")


# Names of 2.x that Megatron imports from modules 1.13 has: module -> names.
MODULE_ATTRS = {
    "torch.cuda.memory": ("CUDAPluggableAllocator",),
}


def _add_missing(module_name, names):
    import importlib

    module = importlib.import_module(module_name)
    for name in names:
        if not hasattr(module, name):
            setattr(module, name, _stub_class(name))
            stubbed.append(module_name + "." + name)


def install(extra_packages=()):
    STUB_PACKAGES.update(p for p in extra_packages if p)
    sys.meta_path.insert(0, _StubFinder())
    import typing

    if not hasattr(typing, "override"):  # Python 3.12
        typing.override = lambda fn: fn
        stubbed.append("typing.override")
    import torch

    for name in TORCH_ATTRS:
        if not hasattr(torch, name):
            setattr(torch, name, _stub_class(name))
            stubbed.append("torch." + name)
    # Megatron's jit_fuser is torch.jit.script before torch 2.2; TorchScript 1.13 cannot compile
    # today's fused functions. Nothing is run, so the decorator returns the function unchanged.
    torch.jit.script = lambda fn=None, *args, **kwargs: fn
    stubbed.append("torch.jit.script")
    for module_name, names in MODULE_ATTRS.items():
        _add_missing(module_name, names)
    # Any other 2.x-only name imported from a loaded torch submodule (from torch.optim.optimizer
    # import ParamsT): a stub class, recorded in `stubbed`.
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("torch.") and not module_name.startswith("torch._C") and module is not None:
            if "__getattr__" not in vars(module):
                module.__getattr__ = _missing_attr(module_name)


def _missing_attr(module_name):
    def getattr_(name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        stubbed.append(module_name + "." + name)
        return _stub_class(name)

    return getattr_


def fake_cuda_device(arch):
    """torch.cuda answers as if one GPU of compute capability `arch` ("9.0") were present."""
    import torch

    major, minor = (int(x) for x in arch.split("."))

    class Props:
        name = "memx-fake-gpu"
        total_memory = 80 * 2**30
        multi_processor_count = 132

    Props.major, Props.minor = major, minor
    torch.cuda.get_device_properties = lambda *a, **k: Props()
    torch.cuda.get_device_capability = lambda *a, **k: (major, minor)
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 1
    torch.cuda.current_device = lambda: 0
    stubbed.append("torch.cuda device queries (fake GPU %s)" % arch)
