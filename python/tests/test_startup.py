"""The structure that keeps start-up fast (issue 29): the command line, a
command's --help and the study list import no heavy library, a run imports
neither pandas nor rich (nor matplotlib, nor pydantic's plugin loader's
importlib.metadata), and the collector is paused only while a command starts;
the timings are benches/startup.py's."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("pandas", "numpy", "pyarrow", "matplotlib", "pydantic")


def _imported_after(code: str) -> list[str]:
    """The heavy libraries a fresh interpreter has imported after running `code`."""
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    return done.stdout.split()


@pytest.mark.parametrize("code", [
    "import tcpeval.cli",
    "import tcpeval",
    # `tcpeval study list` reads each study's NAME and TITLE; pydantic comes with
    # the sweep machinery a study module uses, the others on first use.
    "from tcpeval.studies import STUDIES; [m.TITLE for m in STUDIES.values()]",
])
def test_no_heavy_import(code):
    allowed = {"pydantic"} if "studies" in code else set()
    assert set(_imported_after(code)) <= allowed


@pytest.mark.parametrize("args", [["run", "--help"], ["sweep", "--help"],
                                  ["study", "run", "--help"]])
def test_help_imports_no_heavy_library(args):
    """A command's --help parses only its group's options and --help, none of
    them given a value: typer (0.29) would build a pydantic TypeAdapter for each
    (importing pydantic, 0.1 s); tcpeval.cli coerces a parameter only once it
    has a value."""
    code = ("import contextlib, io, sys\nfrom tcpeval.cli import main\n"
            f"sys.argv = ['tcpeval', *{args!r}]\n"
            "with contextlib.redirect_stdout(io.StringIO()) as shown:\n"
            "    try:\n        main()\n    except SystemExit as e:\n"
            "        assert not e.code, e.code\n"
            "assert shown.getvalue().startswith('Usage: tcpeval ')")
    assert _imported_after(code) == []


def test_package_exports_stay_the_same():
    """The exports are imported on first use; importing the submodule tcpeval.run
    (as the command line does) leaves tcpeval.run the function."""
    code = ("import importlib, tcpeval\n"
            "module = importlib.import_module('tcpeval.run')\n"
            "assert tcpeval.run is module.run and tcpeval.Result is module.Result\n"
            "assert tcpeval.ScenarioError is importlib.import_module('tcpeval.scenario')"
            ".ScenarioError\n"
            "assert callable(tcpeval.load_scenario)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_pool_workers_inherit_the_run_machinery():
    """A sweep's pool is started after the parent imported tcpeval.run (numpy,
    the engine), so a forked worker does not import them per point."""
    code = ("import sys\nfrom tcpeval import sweep\n"
            "assert 'numpy' not in sys.modules\n"
            "with sweep._PoolRunner([], 1, None):\n"
            "    assert 'tcpeval.run' in sys.modules and 'numpy' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "reno_single.toml"


def test_a_run_imports_no_pandas(tmp_path):
    """`tcpeval run --json --out DIR` end to end (a 6 s run, its Parquet files
    written): pandas (0.2-0.4 s to import), rich (`--json` prints no table),
    matplotlib and importlib.metadata (pydantic's plugin loader's, 10-15 ms,
    replaced while plugins are off) stay out; the tables are DataFrames only
    when asked for. The collector, paused while the command started, runs again."""
    code = ("import gc, sys\nfrom tcpeval.cli import main\n"
            f"sys.argv = ['tcpeval', 'run', {str(EXAMPLE)!r}, '--set', 'run.duration=\"6s\"',"
            f" '--json', '--out', {str(tmp_path / 'run')!r}]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "assert gc.isenabled()\n"
            "print(' '.join(m for m in ('pandas', 'rich', 'matplotlib', 'importlib.metadata') "
            "if m in sys.modules), file=sys.stderr)")
    clean = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env=clean)
    assert done.stderr.split() == []
    assert (tmp_path / "run" / "flows.parquet").exists()


def _python(code: str, env: dict, without: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter, with `env` over this one's minus `without`."""
    clean = {k: v for k, v in os.environ.items() if k != without}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**clean, **env})


@pytest.mark.parametrize("env,stand_in", [({}, True), ({"PYDANTIC_DISABLE_PLUGINS": "1"}, True),
                                          ({"PYDANTIC_DISABLE_PLUGINS": ""}, False)])
def test_plugin_loader_stands_in_only_while_plugins_are_off(env, stand_in):
    """main() puts a stand-in for pydantic's plugin loader in place when plugins
    are off (its get_plugins returns () then, as pydantic's does); a user who
    turns plugins on gets pydantic's own. Typer's adapter for --seed's value
    makes pydantic validators, so the loader is imported either way."""
    code = ("import sys\nfrom tcpeval.cli import main\n"
            "sys.argv = ['tcpeval', 'run', '--seed', 'x', 'none.toml']\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert e.code == 2, e.code\n"
            "loader = sys.modules['pydantic.plugin._loader']\n"
            "assert tuple(loader.get_plugins()) == ()\n"
            "print(getattr(loader, '__file__', None) is None)")
    done = _python(code, env, without="PYDANTIC_DISABLE_PLUGINS")
    assert done.stdout.split()[-1] == str(stand_in)


def test_the_collector_runs_during_a_command():
    """main() pauses the collector only while a command starts: the command
    itself runs with it (here `study list`; a run above). The app called
    without main() (CliRunner, a program's own call) leaves it as it was."""
    code = ("import gc, sys\nfrom typer.testing import CliRunner\nfrom tcpeval import cli\n"
            "gc.disable()\n"
            "assert CliRunner().invoke(cli.app, ['study', 'list']).exit_code == 0\n"
            "assert not gc.isenabled()\n"
            "gc.enable()\n"
            "sys.argv = ['tcpeval', 'study', 'list']\n"
            "try:\n    cli.main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "assert gc.isenabled()")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


@pytest.mark.parametrize("env,threads", [({}, "1"), ({"OPENBLAS_NUM_THREADS": "3"}, "3")])
def test_blas_is_single_threaded_unless_asked(env, threads):
    """main() starts numpy's OpenBLAS with one thread (its threads spin at import,
    20 ms of a short run's CPU) unless the user set OPENBLAS_NUM_THREADS."""
    code = ("import os, sys\nfrom tcpeval.cli import main\nsys.argv = ['tcpeval', '--version']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "import numpy\n"
            "tasks = os.listdir('/proc/self/task') if os.path.isdir('/proc/self/task') else [0]\n"
            "print(os.environ['OPENBLAS_NUM_THREADS'], len(tasks))")
    done = _python(code, env, without="OPENBLAS_NUM_THREADS")
    asked, running = done.stdout.split()[-2:]
    assert asked == threads
    if not env:  # numpy imported, and no thread but the main one (Linux's /proc)
        assert running == "1"


def test_the_exit_leaves_the_heap_to_the_process():
    """main() freezes the collector's objects before the interpreter exits, so
    its last collection does not walk the imports' objects (40-50 ms of a short
    run); the exit status is the command's."""
    code = ("import gc, sys\nfrom tcpeval.cli import main\n"
            "sys.argv = ['tcpeval', 'run', '--seed', 'x', 'none.toml']\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert e.code == 2, e.code\n"
            "assert gc.get_freeze_count() > 0, gc.get_freeze_count()")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
