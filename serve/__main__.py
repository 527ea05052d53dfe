"""``python -m serve``: the launcher's command line (see ``serve/__init__.py``)."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import serve
from serve.config import DEFAULT_SEATS, Plan, usable_cpus
from serve.launcher import HAPROXY, Launcher, free_port, log


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m serve",
        description=serve.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=usable_cpus(),
        help="Streamlit processes (default: one per usable CPU, here %(default)s)",
    )
    parser.add_argument(
        "--port", type=int, default=8501, help="the proxy's port (default %(default)s)"
    )
    parser.add_argument(
        "--address", default="0.0.0.0", help="the proxy's address (default: every interface)"
    )
    parser.add_argument(
        "--seats",
        type=int,
        default=DEFAULT_SEATS,
        help="visitors per worker before new ones see the busy page (default %(default)s)",
    )
    parser.add_argument(
        "--run-dir",
        type=Path,
        help="folder for haproxy.cfg and state.json (default: a temporary one, removed at exit)",
    )
    args = parser.parse_args(argv)
    if args.workers < 1 or args.seats < 1:
        parser.error("--workers and --seats must be at least 1")
    if not Path(HAPROXY).exists():
        parser.error(f"{HAPROXY} is not installed (apt-get install -y haproxy)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="normlab-serve-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    plan = Plan(
        address=args.address,
        port=args.port,
        worker_ports=tuple(free_port() for _ in range(args.workers)),
        seats=args.seats,
        bundle_port=free_port(),
    )
    launcher = Launcher(plan, run_dir)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: launcher.stopping.set())
    host = "localhost" if args.address in ("0.0.0.0", "::") else args.address
    log(
        f"NormLab on http://{host}:{args.port}/ with {args.workers} workers, "
        f"{args.seats} seats each (run folder {run_dir})"
    )
    try:
        return launcher.run()
    finally:
        if args.run_dir is None:
            shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
