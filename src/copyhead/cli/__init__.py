"""Command line: ``copyhead <command>``, one subcommand per step of the workflow (``copyhead --help`` lists them).

Thin: parse arguments, validate the config before any compute, call the package, map known failures
(bad config, unreadable file) to a one-line message and exit status 2 instead of a traceback. Each
command group is one module of this package with a ``register(subparsers)`` function, listed in
``GROUPS``: the main pipeline (:mod:`.pipeline`), the studies (:mod:`.studies`), the theory's side
workflows (:mod:`.theory_maps`).

The package behind a command is imported inside the command's function, when it runs: its heavy
dependencies (torch for training, the order parameters and the statistics; xarray for every netCDF file;
scipy for the theory; matplotlib for the figures) take seconds to import, every rule of the workflow and
many tests start a `copyhead` process, and `copyhead --help` or `copyhead check-config` stays fast. These
are ordinary ``from ..module import function`` statements, so grep and editors follow them.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from .. import config as cfgmod
from .. import recovery
from ..datafiles import check_not_foreign, check_writable, config_source_given
from ..provenance import DataFileError, sidecar_path
from . import pipeline, studies, theory_maps

GROUPS = (pipeline, studies, theory_maps)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="copyhead",
        description="copyhead: the command line of the pipeline for 'Phase Transitions in Attention' (Lavie et "
                    "al., 2026). The Snakemake workflow calls these commands; each also runs by hand. "
                    "`copyhead <command> --help` describes one.")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="<command>")
    for group in GROUPS:
        group.register(sub)
    return p


class Terminated(BaseException):
    """SIGTERM (Slurm's scancel or time limit, `kill`): unwinds like Ctrl-C, so that atomic writes
    remove their temporaries and the command says what it leaves behind."""


def _terminate(signum, frame):
    raise Terminated()


def _stopped(args) -> str:
    """What a command stopped by a signal leaves: for `train`, the checkpoint the rerun resumes from."""
    if args.cmd == "train" and args.out:
        from ..run import checkpoint_path     # torch; only for a train command stopped by a signal
        ckpt = checkpoint_path([Path(o) for o in args.out])
        if ckpt.exists():
            return (f"checkpoint {ckpt} is kept: rerun the same command (or snakemake) to resume from it; "
                    "no output file was written")
        return "no checkpoint was written yet (the rerun starts from step 0); no output file was written"
    return "no partial output file is left"


def _check_outputs(args) -> None:
    """Every ``--out`` file of a command can be written and, if it exists, is copyhead's own (a netCDF
    product, or listed by its provenance record): refuse now (one line) rather than after the compute (a
    training job would run to its end, then fail on a read-only or missing folder), and never overwrite
    a user's file."""
    outs = getattr(args, "out", None)
    for out in [outs] if isinstance(outs, str) else outs or []:
        check_not_foreign(out, sidecar_path(out))
        check_writable(out)


def _config_read(args) -> list[str] | None:
    """The config file a command reads itself (``--config FILE``, unless the workflow's JSON form of the
    same settings replaces it): what its products record as the config they were made from. None: the
    command reads none (the workflow's jobs: the Snakefile names its config files in their environment)."""
    path = getattr(args, "config", None)
    if not path or args.cmd == "audit" or any(getattr(args, k, None) for k in ("run_config", "theory_config",
                                                                                 "run_configs")):
        return None
    return [path]


def _job_command(args) -> str:
    """What a job record names: the command and its outputs (the workflow's JSON arguments left out)."""
    outs = getattr(args, "out", None)
    outs = [outs] if isinstance(outs, str) else list(outs or [])
    return " ".join([f"copyhead {args.cmd}", *(["--out", *map(str, outs)] if outs else [])])


def main(argv: list[str] | None = None, parser: argparse.ArgumentParser | None = None) -> int:
    """Run one command: ``parser`` (default :func:`build_parser`; the research package's command line passes
    its own, :mod:`research.cli`) parses ``argv``; known failures end in one line and exit status 2."""
    parser = parser or build_parser()
    args = parser.parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _terminate)
    job = None
    try:
        config_source_given(_config_read(args))
        _check_outputs(args)
        job = recovery.record_job(_job_command(args))     # inside the workflow only (its environment says)
        return args.func(args)
    except (Terminated, KeyboardInterrupt) as e:
        why = "SIGTERM" if isinstance(e, Terminated) else "Ctrl-C (SIGINT)"
        print(f"{parser.prog} {args.cmd}: stopped by {why}; {_stopped(args)}", file=sys.stderr)
        return 143 if isinstance(e, Terminated) else 130
    except BrokenPipeError:     # `copyhead summary ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:
        agg = sys.modules.get("copyhead.aggregate")   # imported lazily (xarray): only then can it raise
        known = (cfgmod.ConfigError, DataFileError) + ((agg.AggregateError,) if agg else ())
        if not isinstance(e, known):
            raise
        print(f"{parser.prog} {args.cmd}: error: {e}", file=sys.stderr)
        return 2
    finally:
        recovery.release_job(job)
        config_source_given(None)
        signal.signal(signal.SIGTERM, previous)

