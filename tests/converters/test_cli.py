"""``python -m stagecraft show-converted FILE.py:FUNCTION``."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SOURCE = textwrap.dedent('''
    import stagecraft as tf
    from neighbour import offset

    print("imported")  # module side effects go to stdout too, like any import

    def plain(x):
        while x > 0:
            x = x - offset
        return x

    @tf.function
    def staged(x):
        if x > 0:
            x = -x
        return x

    class Model:
        @tf.function
        def call(self, x):
            for i in tf.range(3):
                x = x + i
            return x

        def method(self, x):
            return x if x > 0 else -x

        @staticmethod
        def static(x):
            assert x > 0, "positive"
            return x

    def uses_yield(x):
        yield x

    CONSTANT = 3

    if __name__ == "__main__":
        raise SystemExit("the main block must not run")
''')


@pytest.fixture()
def program(tmp_path: Path) -> Path:
    (tmp_path / "neighbour.py").write_text("offset = 1\n")
    path = tmp_path / "program.py"
    path.write_text(SOURCE)
    return path


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stagecraft", *args], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "PYTHONWARNINGS": "ignore"})


def test_plain_function(program: Path) -> None:
    out = run("show-converted", f"{program}:plain")
    assert out.returncode == 0, out.stderr
    code = out.stdout.split("imported\n", 1)[1]
    assert code.startswith("def plain(x):")
    assert f"sc__.while_stmt(loop_test, loop_body, get_state, set_state, ('x',), " \
           f"'{program}:8')" in code
    compile(code, "converted", "exec")  # valid Python


def test_tf_function_and_methods(program: Path) -> None:
    out = run("show-converted", f"{program}:staged")
    assert out.returncode == 0, out.stderr
    assert "def staged(x):" in out.stdout and "sc__.if_stmt(" in out.stdout
    out = run("show-converted", f"{program}:Model.call")
    assert out.returncode == 0, out.stderr
    assert "def call(self, x):" in out.stdout and "sc__.for_stmt(" in out.stdout
    out = run("show-converted", f"{program}:Model.method")
    assert out.returncode == 0, out.stderr
    assert "sc__.if_exp(" in out.stdout
    out = run("show-converted", f"{program}:Model.static")
    assert out.returncode == 0, out.stderr
    assert "sc__.assert_stmt(" in out.stdout


def test_relative_path_from_another_directory(program: Path) -> None:
    out = run("show-converted", "program.py:plain", cwd=program.parent)
    assert out.returncode == 0, out.stderr
    assert "def plain(x):" in out.stdout


def test_missing_file_exits_2(tmp_path: Path) -> None:
    out = run("show-converted", f"{tmp_path}/absent.py:f")
    assert out.returncode == 2
    assert f"error: no such file: {tmp_path}/absent.py" in out.stderr
    assert out.stdout == ""


def test_missing_function_exits_2_and_lists_what_is_there(program: Path) -> None:
    out = run("show-converted", f"{program}:nope")
    assert out.returncode == 2
    assert "has no function 'nope'" in out.stderr
    assert "Model, plain, staged" in out.stderr
    out = run("show-converted", f"{program}:Model.nope")
    assert out.returncode == 2
    assert f"{program}:Model has no function 'nope' (it defines: call, method, static)" \
        in out.stderr


def test_not_a_function_and_malformed_targets_exit_2(program: Path) -> None:
    out = run("show-converted", f"{program}:CONSTANT")
    assert out.returncode == 2 and "CONSTANT in" in out.stderr \
        and "is not a function (type int)" in out.stderr
    out = run("show-converted", str(program))
    assert out.returncode == 2 and "expected FILE.py:FUNCTION" in out.stderr
    out = run("show-converted")
    assert out.returncode == 2 and "usage:" in out.stderr
    out = run("frobnicate")
    assert out.returncode == 2 and "invalid choice" in out.stderr


def test_unconvertible_function_exits_1_with_the_reason(program: Path) -> None:
    out = run("show-converted", f"{program}:uses_yield")
    assert out.returncode == 1
    assert "generator (yield)" in out.stderr
    assert f"{program}:" in out.stderr


def test_main_in_process(program: Path, capsys: pytest.CaptureFixture) -> None:
    from stagecraft.__main__ import main
    assert main(["show-converted", f"{program}:staged"]) == 0
    assert "def staged(x):" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["show-converted", f"{program}:missing"])
    assert exit_.value.code == 2


def test_warmup_runs_every_program_and_reports_times() -> None:
    """(Under the test suite's reference backend nothing compiles: this checks the command.)"""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "stagecraft", "warmup"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out[0] == "stagecraft warmup: compiling into the disk cache (once per installation)"
    assert any(line.startswith("  MLP training step") for line in out)
    assert out[-1].startswith("done in ")
