"""The targets of issue 19 ("The GPU at library speed") read off gpu_backend.py's results: each
target's measured value, its bound, and whether it is met."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from cpu_backend import _fmt  # sibling script module


@dataclass(frozen=True)
class Target:
    name: str
    section: str  # the results' key (an --only name) the value comes from
    measure: str
    at_most: bool  # value <= bound (a time ratio); else value >= bound (a speed ratio)
    bound: float
    value: Callable[[dict], float | None]


def _per_torch(section: str, variant: str) -> Callable[[dict], float | None]:
    return lambda results: results[section]["variants"][variant]["per_torch"]


def _matmul_speed(tf32: str) -> Callable[[dict], float | None]:
    """cuBLAS's time (the faster of PyTorch and CuPy) over stagecraft's eager matmul, calls
    queued with one synchronize per batch (throughput)."""
    def value(results: dict) -> float | None:
        ratio = results["matmul"][tf32]["variants"]["eager_gpu"]["ratio_to_blas"]
        return None if ratio is None else 1 / ratio
    return value


def _staging_speedup(workload: str) -> Callable[[dict], float | None]:
    def value(results: dict) -> float | None:
        row, = (r for r in results["rows"] if r["workload"] == workload)
        return row["eager_gpu/staged_gpu"]
    return value


TARGETS = (
    Target("eager add (1000 floats), per op", "add", "stagecraft / torch", True, 1.5,
           _per_torch("add", "stagecraft")),
    Target("10-op expression, staged", "expression", "staged / torch eager", True, 0.5,
           _per_torch("expression", "stagecraft_staged")),
    Target("MLP step, staged (TF32 off)", "mlp_step", "staged / torch eager", True, 1.15,
           _per_torch("mlp_step", "stagecraft_staged")),
    Target("matmul 4096^2, TF32 off", "matmul", "speed / cuBLAS", False, 0.95,
           _matmul_speed("tf32_off")),
    Target("matmul 4096^2, TF32 on", "matmul", "speed / cuBLAS", False, 0.95,
           _matmul_speed("tf32_on")),
    Target("L2HMC step on the GPU", "l2hmc", "eager / staged", False, 10.0,
           _staging_speedup("l2hmc")),
    Target("RNN forward on the GPU", "rnn_forward", "eager / staged", False, 10.0,
           _staging_speedup("rnn_forward")),
    Target("RNN forward+backward on the GPU", "rnn_backward", "eager / staged", False, 10.0,
           _staging_speedup("rnn_backward")),
)


def assess(results: dict, errors: dict[str, str], only: list[str]) -> list[dict]:
    """One entry per target: its value and status ("met", "NOT met" or why it was not
    measured: the section failed or was not run, or PyTorch/cuBLAS was not there)."""
    rows = []
    for target in TARGETS:
        value = None
        if target.section in errors:
            status = f"not measured: the section failed ({errors[target.section]})"
        elif target.section not in only:
            status = "not measured: not run (--only)"
        else:
            value = target.value(results)
            if value is None:
                status = "not measured: no PyTorch/CuPy with a GPU here"
            else:
                met = value <= target.bound if target.at_most else value >= target.bound
                status = "met" if met else "NOT met"
        rows.append({"target": target.name, "measure": target.measure,
                     "goal": f"{'<=' if target.at_most else '>='} {target.bound:g}",
                     "value": value, "status": status})
    return rows


def print_targets(rows: list[dict], simulated: bool) -> None:
    print("TARGETS (issue 19, on an H100 or H200)"
          + (" -- simulated, so the verdicts mean nothing" if simulated else ""))
    print(f"  {'target':34s}{'measure':22s}{'value':>8s}{'goal':>9s}  status")
    for row in rows:
        value: Any = "n/a" if row["value"] is None else _fmt(row["value"])
        print(f"  {row['target']:34s}{row['measure']:22s}{value:>8s}{row['goal']:>9s}  "
              f"{row['status']}")
