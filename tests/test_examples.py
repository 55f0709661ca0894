"""The examples run and print what the paper prints."""
import json
import os
import subprocess
import sys

import pytest

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


def test_gpu_host_benchmark_runs_on_real_array_classes_without_a_gpu(tmp_path) -> None:
    """gpu_host.py: eager GPU ops' host work on Numba's real classes, with a stand-in GPU
    (it runs without the simulator even where the tests use it)."""
    import json
    path = tmp_path / "bench.json"
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "benchmarks",
                                                       "gpu_host.py"),
                          "--repeat", "2", "--number", "100", "--json", str(path)],
                         check=True, capture_output=True, text=True, timeout=300)
    assert out.stdout.startswith("HOST cost of eager GPU ops: Numba's real array classes")
    rows = {r["call"]: r["host_us"] for r in json.loads(path.read_text())["rows"]}
    assert {"gpu    x + y", "gpu    10-op expression", "gpu    matmul 64x64 (cuBLAS)",
            "gpu    MLP training step (whole step)"} <= set(rows)
    assert all(us > 0 for us in rows.values())


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


@pytest.mark.cuda
def test_gpu_first_call_benchmark_runs_on_the_cuda_simulator(tmp_path) -> None:
    """gpu_first_call.py --quick: two fresh processes (empty caches, then the caches the first
    filled), each timing an eager and a staged MLP step twice on the simulator, where nothing
    compiles: the kernel counts are 0 there (on a GPU the second row should compile none)."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    path = tmp_path / "first.json"
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "benchmarks",
                                                       "gpu_first_call.py"),
                          "--quick", "--json", str(path)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("first GPU calls in fresh processes (MLP 16-8-4, batch 4")
    rows = json.loads(path.read_text())
    assert list(rows) == ["empty caches", "warm caches"]
    for row in rows.values():
        assert all(row[f"{w}_{c}_s"] > 0 for w in ("eager", "staged") for c in ("first", "second"))
        assert row["compiled"] == row["loaded"] == 0


@pytest.mark.cuda
def test_gpu_backend_benchmark_runs_on_the_cuda_simulator(tmp_path) -> None:
    """The GPU benchmark's smoke test: every section at tiny sizes on Numba's CUDA simulator
    (whatever the machine has), staged_cpu on the default Numba backend; PyTorch and CuPy are
    compared only where they see a real GPU."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "STAGECRAFT_BACKEND": "numba"}
    script = os.path.join(ROOT, "examples", "benchmarks", "gpu_backend.py")
    path = tmp_path / "gpu.json"
    out = subprocess.run([sys.executable, script, "--quick", "--json", str(path)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("GPU: Numba CUDA simulator (simulator), numba-cuda ")
    assert lines[1].startswith("TF32 control")

    def table(title: str, rows: int, header: int = 1) -> dict[str, list[str]]:
        """The rows under the line that starts with ``title`` and its ``header`` lines."""
        start = next(i for i, line in enumerate(lines) if line.startswith(title)) + 1 + header
        return {line.split()[0]: line.split()[1:] for line in lines[start:start + rows]}

    add = table("add of two 8-element float32 vectors, us per op", 3)
    assert set(add) == {"stagecraft", "torch", "cupy"} and float(add["stagecraft"][0]) > 0
    expression = table("10-op expression on 8-element", 4)
    assert set(expression) == {"stagecraft_eager", "stagecraft_staged", "torch", "cupy"}
    classifier = table("sparse softmax cross-entropy's gradient, 4x3 float32 logits", 3)
    assert set(classifier) == {"stagecraft_eager", "stagecraft_staged", "torch"}
    assert all(float(classifier[v][0]) > 0 for v in ("stagecraft_eager", "stagecraft_staged"))
    mlp = table("MLP training step, batch 4, 4->8->4 float32, TF32 off", 3)
    assert set(mlp) == {"stagecraft_eager", "stagecraft_staged", "torch"}
    assert all(float(mlp[v][0]) > 0 for v in ("stagecraft_eager", "stagecraft_staged"))
    assert lines[lines.index("median ms per call") + 1].split() == [
        "workload", "eager_gpu", "staged_gpu", "staged_cpu", "eager_gpu/staged_gpu",
        "staged_cpu/staged_gpu"]
    rows = table("median ms per call", 3)
    assert set(rows) == {"l2hmc", "rnn_forward", "rnn_backward"}
    assert all(len(cells) == 5 and all(float(c) > 0 for c in cells) for cells in rows.values())
    for tf32 in ("off", "on"):
        title = f"matmul 8x8 float32, TF32 {tf32}"  # its column names on the same line
        assert next(line for line in lines if line.startswith(title)).split()[-5:] == [
            "ms", "GFLOP/s", "/BLAS", "ms_synced", "/BLAS"]
        matmul = table(title, 4, header=0)
        assert list(matmul) == ["eager_gpu", "staged_gpu", "cupy", "torch"]
        assert float(matmul["eager_gpu"][0]) > 0 and float(matmul["staged_gpu"][1]) > 0
        assert float(matmul["eager_gpu"][3]) > 0 and len(matmul["torch"]) >= 5
    conv = table("convolutions, batch 2, NHWC float32, TF32 off", 2)
    assert set(conv) == {"3x3", "1x1/2"}   # (shape names: "3x3 6x6x2->3", ...)
    assert all(float(cells[1]) > 0 and float(cells[4]) > 0 for cells in conv.values())
    report = json.loads(path.read_text())
    assert report["errors"] == {}
    assert [r["shape"] for r in report["conv"]["rows"]] == ["3x3 6x6x2->3", "1x1/2 6x6x2->4"]
    errors = report["mlp_step"]["variants"]["stagecraft_staged"]["relative_errors"]
    assert errors["loss, first"] < 1e-4 and errors["update 3, after timing"] < 1e-4
    assert len(report["targets"]) == 8
    assert [t["target"] for t in report["targets"]][-3:] == [
        "L2HMC step on the GPU", "RNN forward on the GPU", "RNN forward+backward on the GPU"]
    printed = lines[next(i for i, line in enumerate(lines) if line.startswith("TARGETS")) + 2:]
    for target, line in zip(report["targets"], printed, strict=True):
        # Without PyTorch/CuPy on a GPU their ratios are not measured.
        assert target["status"] in ("met", "NOT met") or \
            target["status"].startswith("not measured: no PyTorch/CuPy"), target
        assert line.split()[:2] == target["target"].split()[:2], line
        assert line.endswith(f"  {target['status']}"), line


def test_persistence_example_trains_restores_and_loads_in_another_process(tmp_path) -> None:
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "persistence.py"),
                          "--steps", "3", "--dir", str(tmp_path)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].startswith("trained 3 steps: loss ")
    assert out[1].startswith("checkpoint: ") and "step-1" in out[1]
    assert out[2] == ("restored into a fresh model: outputs equal True, "
                      "next step's loss equal True")
    assert out[3] == "SavedModel loaded in a separate process: outputs equal True"


def test_keras_digits_example_trains_saves_and_reloads() -> None:
    pytest.importorskip("sklearn", reason="the digits come from scikit-learn (the test and "
                                          "examples extras install it)")
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "keras_digits.py"),
                          "--verbose", "0"], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    accuracy = float(out[0].split()[2])
    assert accuracy >= 0.95, out
    assert out[1].startswith("input wait: ")
    assert out[2] == "reloaded model predicts identically: True"


def test_keras_fit_benchmark_runs(tmp_path) -> None:
    import json
    path = tmp_path / "bench.json"
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "benchmarks", "keras_fit.py"),
                    "--quick", "--json", str(path)], check=True, capture_output=True)
    report = json.loads(path.read_text())
    assert len(report["rows"]) == 3 and report["fit_over_hand"] > 0


def test_flagship_example_stages_tensor_control_flow() -> None:
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "flagship.py")],
                         capture_output=True, text=True, check=True).stdout
    assert out.startswith("eager:  11 Newton steps")
    assert "sc__.while_stmt(loop_test, loop_body" in out  # the converted code is shown
    assert "staged: 11 Newton steps, first call " in out
    assert "steady state: eager " in out


def test_api_coverage_counts_the_names_a_namespace_has(tmp_path) -> None:
    names = tmp_path / "names.json"
    names.write_text('{"namespaces": {"": ["constant", "no_such_name"], '
                     '"nn": ["relu", "conv2d"], "keras.layers": ["Dense", "NoSuchLayer"]}}')
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "api_coverage.py"),
                          str(names), "--missing", "tf.keras.layers"],
                         capture_output=True, text=True, check=True).stdout
    assert "tf                         1/2" in out
    assert "tf.nn                      2/2" in out
    assert out.splitlines()[-1] == "tf.keras.layers lacks: NoSuchLayer"


def test_resnet50_benchmark_runs_quick(tmp_path) -> None:
    import json
    path = tmp_path / "bench.json"
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "benchmarks",
                                                       "resnet50.py"), "--quick", "--batches",
                          "1", "--backend", "reference", "--json", str(path)], capture_output=True, text=True, check=True)
    rows = json.loads(path.read_text())
    assert [r["batch"] for r in rows] == [1]
    assert all(rows[0][k] > 0 for k in ("eager", "staged", "numpy"))
    assert "staged/numpy" in out.stdout


def test_conv_benchmark_runs_quick(tmp_path) -> None:
    import json
    path = tmp_path / "bench.json"
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "benchmarks",
                                                       "conv.py"), "--quick", "--json", str(path)],
                         capture_output=True, text=True, check=True)
    rows = json.loads(path.read_text())
    assert len(rows) == 2 and all(r["fwd+bwd staged"] > 0 for r in rows)
    assert "st/np" in out.stdout


@pytest.mark.cuda
def test_gpu_profile_runs_on_the_cuda_simulator() -> None:
    """gpu_profile.py's smoke test at tiny sizes: the MLP step's ops by share (every op of the
    step's forward and backward passes, the mean among them), the add's layers, the upload
    behind queued work and the interleaved matmul."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    script = os.path.join(ROOT, "examples", "benchmarks", "gpu_profile.py")
    out = subprocess.run([sys.executable, script, "--quick", "--steps", "1"], env=env,
                         cwd=os.path.dirname(script), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("eager MLP step (4, 4, 8, 4): ")
    ops = {line.split()[0] for line in lines[2:lines.index(next(
        line for line in lines if line.strip().startswith("sum of ops")))]}
    assert {"matmul", "relu", "reduce_mean", "sum_like", "broadcast_like"} <= ops
    at = lines.index("eager add of 8 float32, us per call by layer (loop of calls, one "
                     "synchronize):")
    assert [line[:24].strip() for line in lines[at + 1:at + 5]] == [
        "layer", "x + y", "eager.run('add')", "memory.empty"]
    assert lines[at + 1].split() == ["layer", "host", "total"]
    at = lines.index("upload of 8 float32 behind ten queued matmuls, host us (median of 5):")
    assert [line[:24].strip() for line in lines[at + 1:at + 3]] == [
        "numba cuda.to_device", "memory.to_device"]
    for tf32 in ("off", "on"):
        at = lines.index(f"matmul 8x8 float32, TF32 {tf32}, interleaved rounds, median ms "
                         f"(synchronized; until the call returned):")
        rows = [line.split() for line in lines[at + 1:at + 3]]
        assert [r[0] for r in rows] == ["stagecraft_eager", "stagecraft_staged"]
        assert all(float(r[1]) >= float(r[2]) > 0 for r in rows)   # (returned before synced)


def test_interleaved_timing_takes_the_variants_batches_in_turns(monkeypatch) -> None:
    """timing.time_interleaved: each round runs one batch of every variant, starting one
    variant later than the round before (clock drift is shared, not given to one variant)."""
    monkeypatch.syspath_prepend(os.path.join(ROOT, "examples", "benchmarks"))
    from timing import time_interleaved
    log: list = []
    timed = time_interleaved({"a": lambda: log.append("a"), "b": lambda: log.append("b"),
                              "c": lambda: log.append("c")}, 3, 2)
    assert "".join(log) == "aabbcc" + "bbccaa" + "ccaabb"
    assert {v["repeat"] for v in timed.values()} == {3} and timed["a"]["min_ms"] >= 0
