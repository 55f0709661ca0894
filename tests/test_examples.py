"""The examples run and print what the paper prints."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quickstart_prints_the_papers_results() -> None:
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "quickstart.py")],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "stagecraft.Tensor([[2.]], shape=(1, 1), dtype=float32)"
    assert out[1] == "stagecraft.Tensor(6.0, shape=(), dtype=float32)"
    assert out[2] == "stagecraft.Tensor(2.0, shape=(), dtype=float32)"
    assert out[3] == "stagecraft.Tensor(6.0, shape=(), dtype=float32)"
    before, after = (float(v) for v in out[4].split()[1::2])
    assert after < before


def test_eager_overhead_benchmark_runs(tmp_path) -> None:
    path = tmp_path / "bench.json"
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "benchmarks",
                                                 "eager_overhead.py"), "--repeat", "2",
                    "--number", "50", "--json", str(path)], check=True, capture_output=True)
    assert path.read_text().count("median_us") >= 8


def test_autograph_conversion_benchmark_runs(tmp_path) -> None:
    path = tmp_path / "bench.json"
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "benchmarks",
                                                       "autograph_conversion.py"),
                          "--repeat", "2", "--number", "10", "--json", str(path)],
                         check=True, capture_output=True, text=True)
    import json
    rows = {r["what"].strip(): r["median_ms"] for r in json.loads(path.read_text())["rows"]}
    assert rows["convert (fresh, caches cleared)"] > rows["convert (cache hit)"] > 0
    assert "convert (cache hit)" in out.stdout
    assert "retracing" not in out.stdout + out.stderr


def test_cpu_backend_benchmark_runs_every_workload_four_ways(tmp_path) -> None:
    import json
    path = tmp_path / "bench.json"
    script = os.path.join(ROOT, "examples", "benchmarks", "cpu_backend.py")
    out = subprocess.run([sys.executable, script, "--quick", "--backend", "reference",
                          "--json", str(path)], check=True, capture_output=True, text=True)
    report = json.loads(path.read_text())
    rows = {r["workload"]: r for r in report["rows"]}
    assert set(rows) == {"l2hmc", "newton", "rnn_forward", "rnn_backward", "mlp_train_step",
                         "collatz", "matmul_chain"}
    for name, row in rows.items():
        assert set(row["variants"]) == {"eager", "staged", "numpy", "numba"}, name
        assert all(v["median_ms"] > 0 for v in row["variants"].values()), name
        assert row["eager/staged"] > 0 and row["staged/numba"] > 0, name
        assert name in out.stdout
    assert report["machine"]["backend"] == "reference"
    assert "first call of the staged l2hmc step" in out.stdout


def test_persistence_example_trains_restores_and_loads_in_another_process(tmp_path) -> None:
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "persistence.py"),
                          "--steps", "3", "--dir", str(tmp_path)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].startswith("trained 3 steps: loss ")
    assert out[1].startswith("checkpoint: ") and "step-1" in out[1]
    assert out[2] == ("restored into a fresh model: outputs equal True, "
                      "next step's loss equal True")
    assert out[3] == "SavedModel loaded in a separate process: outputs equal True"
