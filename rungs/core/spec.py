"""Task specs: YAML files validated by pydantic (unknown keys are errors, reported with file and line).

A task names a torch reference and an input maker in a Python file beside it. Shapes are dicts of
variables (`{M: 1000, N: 1023}`, `{B: 1, H: 2, S: 100, D: 64, causal: true}`); the roofline formulas are
expressions of those variables.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rungs.core.errors import BadInput
from rungs.core.expr import ExprError, check_expr, evaluate
from rungs.core.yamlload import load_yaml_model
from rungs.core.yamlload import where as yaml_where
from rungs.core.imports import import_file

ShapeValue = int | float | bool | str
Dtype = Literal["float32", "tf32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]
PRECISIONS: dict[str, Dtype] = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
"""`harness eval --precision`: upstream KernelBench's precision names (get_torch_dtype_from_string) and the task dtype
each casts the problem's float inputs and weights to. Here, not in harness/kernelbench.py: the eval command checks the
name without importing torch (its problems are judged in processes of their own, which import it anyway)."""
Distribution = Literal["normal", "uniform", "heavy_tailed", "large", "edge"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Tolerance(Strict):
    """Thresholds for one dtype; any left out keeps the dtype's default (rungs/ladder/metrics.py)."""

    max_abs_scaled: float | None = None
    """Largest |out - ref| beyond one rounding of each element to the dtype, over the reference's RMS (a max-error
    guard that scales with the output)."""
    rel_l2: float | None = None
    """||out - ref|| / ||ref|| at most this."""
    psnr_db: float | None = None
    """Peak signal-to-noise ratio at least this many dB."""
    cosine: float | None = None
    """Cosine similarity of out and ref (flattened) at least this."""
    atol: float | None = None
    """With rtol, an element-wise check besides the metrics: every |out - ref| <= atol + rtol * |ref| (torch.allclose's
    rule; KernelBench problems carry upstream's figures per precision). Not checked unless set."""
    rtol: float | None = None
    """The element-wise check's relative term (see atol)."""


class Shapes(Strict):
    test: list[dict[str, ShapeValue]]
    """Small shapes checked for correctness (through the Triton interpreter on a CPU): include sizes no block divides."""
    bench: list[dict[str, ShapeValue]] = Field(default_factory=list)
    """Large shapes timed on a GPU."""
    long: list[dict[str, ShapeValue]] = Field(default_factory=list)
    """Shapes checked for correctness after the test shapes, one seed each: long along one dimension and small along
    the others, so a loop over blocks runs past its first (a KernelBench problem's are chosen for it)."""

    def checked(self) -> list[dict[str, ShapeValue]]:
        """Every shape the correctness rung checks: the test shapes, then the long ones."""
        return self.test + self.long


class Roofline(Strict):
    flops: str = "0"
    """Floating-point operations as a formula of the shape variables."""
    bytes: str = "0"
    """Fewest bytes through device memory (each input read once, each output written once)."""
    target: float = 0.9
    """Fraction of the roofline floor time at which the run stops: floor_time / runtime >= target."""
    unit: Literal["matmul", "fp32"] = "matmul"
    """Which compute ceiling the FLOPs run on: the dtype's matrix rate, or plain fp32 arithmetic."""

    @field_validator("flops", "bytes")
    @classmethod
    def _formula(cls, v: str) -> str:
        try:
            check_expr(str(v))
        except ExprError as exc:
            raise ValueError(str(exc)) from None
        return str(v)


class Budgets(Strict):
    iterations: int = 8
    """Iterations (kernel submissions) before the run stops."""
    minutes: float = 30.0
    """Wall time before the run stops."""
    tokens: int | None = None
    """Input plus output tokens over the run."""
    usd: float | None = None
    """Dollars over the run, from the price table (harness/prices.yaml, or the file HARNESS_PRICES names)."""
    gpu_seconds: float | None = Field(default=None, gt=0)
    """GPU seconds over the run: the wall time each candidate's climb held its GPU (one worker compiles, runs and
    times, then profile and baselines), summed over all GPUs; checked between iterations."""
    prompt_chars: int = Field(default=60000, ge=2000)
    """Largest iteration prompt in characters: past it, older history rows and rung details are summarised."""

    def overridden(self, overrides: dict[str, Any] | None) -> "Budgets":
        """These budgets with the options a user gave (None: not given) in their place, validated."""
        given = {k: v for k, v in (overrides or {}).items() if v is not None}
        return type(self).model_validate({**self.model_dump(), **given})


class TaskSpec(Strict):
    """One kernel-writing task."""

    name: str
    description: str
    dsl: Literal["triton", "cute", "cuda", "tilelang"] = "triton"
    entry: str = "kernel"
    """Function the candidate file must define (KernelBench problems: class ModelNew)."""
    signature: str = ""
    """How the entry is called, shown to the model, e.g. `kernel(x: Tensor[M, N] fp32) -> Tensor[M, N] fp32`."""
    reference: str
    """`file.py:function`, relative to the task file: the slow, trusted implementation."""
    inputs: str
    """`file.py:function`, called as make_inputs(shape, dtype, seed, dist) -> tuple of inputs (tensors on the CPU);
    `dtype` is a torch.dtype. The reference receives float64 copies of the floating-point inputs. A maker that also
    takes `device` is called with it for the bench shapes and draws there itself, in the calling thread, by each
    process that needs the inputs (rungs/timing/inputs.py): it must give the same values for the same seed there."""
    outputs: list[str] = Field(default_factory=list)
    """Names of the entry's outputs, in order (`[out, lse]`), used in messages; default `output 0`, `output 1` ..."""
    dtypes: list[Dtype] = Field(min_length=1)
    """Each is passed to the input maker as a torch.dtype (`float32` -> torch.float32; `tf32` -> torch.float32)."""
    shapes: Shapes
    distributions: list[Distribution] = Field(default_factory=lambda: ["normal"])
    """Input distributions the input maker supports; correctness uses each."""
    seeds: int = Field(default=3, ge=1)
    tolerances: dict[Dtype, Tolerance] = Field(default_factory=dict)
    roofline: Roofline = Field(default_factory=Roofline)
    budgets: Budgets = Field(default_factory=Budgets)
    context: list[str] = Field(default_factory=list)
    """Context directories the model may search (names from `harness context`)."""
    model: str | None = None
    """Default model spec when none is given on the command line."""
    transcript: str | None = None
    """Demo transcript (JSONL of assistant turns) replayed when no API key is set, relative to the task file."""
    allow_torch_compute: bool = False
    """Whether the candidate may compute with torch ops on the hot path."""
    timeout_s: float = 120.0
    """Wall time one worker process may take before it is killed."""
    autotune_s: float = Field(default=60.0, ge=0.0)
    """GPU seconds one candidate may spend timing the points of its declared config space (CONFIGS or
    @triton.autotune) at the bench shapes; points past it are reported untimed and cannot win. The worker's time
    limit grows by as much on a GPU."""

    path: Path = Field(default=Path("."), exclude=True)
    """Where the task file was loaded from (set by load_task)."""

    @property
    def dir(self) -> Path:
        return self.path.parent

    def resolve(self, rel: str) -> Path:
        return (self.dir / rel).resolve()

    def output_name(self, i: int, count: int) -> str:
        """What messages call output `i` of `count`: its name from `outputs:`, else `output i` (or `the output`)."""
        if i < len(self.outputs):
            return f"output {self.outputs[i]}"
        return "the output" if count == 1 else f"output {i}"

    def where(self, *loc: str | int) -> str:
        """`tasks/x.yaml:12: key 'shapes.test.3'`: where in the task file a key is, for one-line errors."""
        return yaml_where(self.path, loc)

    def shape_loc(self, shape: dict[str, ShapeValue]) -> tuple[str | int, ...]:
        """The key path of a shape in the task file (`shapes.test.3`), found by identity, then by value."""
        for kind in ("test", "long", "bench"):
            shapes = getattr(self.shapes, kind)
            for i, s in enumerate(shapes):
                if s is shape:
                    return ("shapes", kind, i)
        for kind in ("test", "long", "bench"):
            if shape in getattr(self.shapes, kind):
                return ("shapes", kind, getattr(self.shapes, kind).index(shape))
        return ("shapes",)

    def floor_terms(self, shape: dict[str, ShapeValue]) -> tuple[float, float]:
        """(FLOPs, bytes) for one shape."""
        return evaluate(self.roofline.flops, shape), evaluate(self.roofline.bytes, shape)


def load_callable(task: TaskSpec, ref: str, key: str) -> Callable[..., Any]:
    """Resolve `file.py:function` relative to the task file."""
    file, sep, func = ref.partition(":")
    where = task.where(key)
    if not sep or not func:
        raise BadInput(f"{where}: expected 'file.py:function', got {ref!r}")
    path = task.resolve(file)
    if not path.is_file():
        raise BadInput(f"{where}: file {path} not found")
    try:
        module = import_file(path)
    except Exception as exc:  # a broken reference file is the task author's to fix
        raise BadInput(f"{where}: importing {path.name} failed: {type(exc).__name__}: {exc}") from None
    fn = getattr(module, func, None)
    if not callable(fn):
        raise BadInput(f"{where}: {path.name} defines no function {func!r}")
    return fn


def load_task(path: str | Path) -> TaskSpec:
    path = Path(path)
    task = load_yaml_model(path, TaskSpec)
    task.path = path.resolve()
    for key in ("reference", "inputs"):
        load_callable(task, getattr(task, key), key)
    if task.transcript and not task.resolve(task.transcript).is_file():
        raise BadInput(f"{task.where('transcript')}: file {task.resolve(task.transcript)} not found")
    for shape in task.shapes.checked() + task.shapes.bench:
        for term in ("flops", "bytes"):
            try:
                evaluate(getattr(task.roofline, term), shape)
            except ExprError as exc:
                if exc.name is not None:  # the shape's value is wrong, not the formula
                    raise BadInput(f"{task.where(*task.shape_loc(shape), exc.name)}: {exc} (the roofline "
                                   f"{term} formula uses it)") from None
                raise BadInput(f"{task.where('roofline', term)}: {exc} for shape {shape}") from None
            except (ZeroDivisionError, TypeError, ValueError, OverflowError) as exc:
                raise BadInput(f"{task.where('roofline', term)}: {type(exc).__name__}: {exc} for shape "
                               f"{shape}") from None
    return task
