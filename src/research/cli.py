"""The research package's command line: ``python -m research <command>`` (or ``copyhead-research <command>``),
the commands of its side workflows, run as copyhead's are (:func:`copyhead.cli.main`: one-line errors, exit
status 2, outputs checked before any compute):

- ``one-loop predict|figure|dataset-figure|remainder-figure|page``: the one-loop correction against the
  measured finite-size gaps (:mod:`research.one_loop`; workflow/one_loop.smk; docs/one_loop.md);
- ``prior-check``, ``prior-check-figure``, ``prior-check-page``: the prior of the order parameters checked by
  sampling Q, K and its effect on the transitions (:mod:`research.prior_check`; workflow/prior_check.smk;
  docs/prior_check.md).

Each command imports the package function it calls when it runs, as copyhead's commands do.
"""
from __future__ import annotations

import argparse

from copyhead.cli import main as run
from copyhead.config import ConfigError

ONE_LOOP_STUDIES = ("finite_size", "finite_L", "converged")


def _cmd_prior_check(a) -> int:
    from .prior_check.output import write_check
    write_check(a.out)
    return 0


def _cmd_prior_check_figure(a) -> int:
    from .prior_check.figure import write
    write(a.prior, a.out)
    return 0


def _cmd_prior_check_page(a) -> int:
    from .prior_check.page import write_page
    write_page(a.prior, a.out)
    return 0


def _cmd_one_loop(a) -> int:
    if a.what == "predict":
        need = ("results",) if a.study == "converged" else ("studies", "base", "spec")
        missing = [f"--{k}" for k in need if not getattr(a, k)]
        if missing:
            raise ConfigError(f"one-loop predict --study {a.study} needs {', '.join(missing)}")
        if a.study == "converged" and a.attention != "linear":
            raise ConfigError("one-loop predict --study converged compares linear attention only")
        from .one_loop.points import read_points
        from .one_loop.predict_output import write_predictions
        read = read_points(a.study, studies=a.studies, base=a.base, spec=a.spec, results=a.results,
                           attention=a.attention, recipe=a.recipe)
        write_predictions(a.out, coarse=a.coarse, attention=a.attention, **read)
    elif a.what == "figure":
        from .one_loop.figures import write
        write(a.finite_size, a.finite_L, a.out)
    elif a.what == "dataset-figure":
        from .one_loop.figures import write_dataset
        write_dataset(a.predictions, a.out)
    elif a.what == "remainder-figure":
        from .one_loop.figures import write_remainder
        write_remainder(a.finite_size, a.finite_L, a.converged, a.out)
    else:
        from .one_loop.page import write_page
        write_page(a.finite_size, a.finite_L, a.out, check=a.check, converged=a.converged, softmax=a.softmax)
    return 0



def register(sub) -> None:
    pc = sub.add_parser("prior-check", help="the prior of the order parameters at d_k < L checked by sampling, and "
                                            "its effect on the transitions -> netCDF (docs/prior_check/prior_check.nc)")
    pc.add_argument("--out", required=True, help="output .nc")
    pc.set_defaults(func=_cmd_prior_check)
    for name, func, what in (("prior-check-figure", _cmd_prior_check_figure, "fig_prior_check.png with its provenance "
                              "sidecar (docs/prior_check/)"),
                             ("prior-check-page", _cmd_prior_check_page, "the Markdown page docs/prior_check.md with "
                              "its provenance record")):
        s = sub.add_parser(name, help=f"{what}, from the prior check (prior-check; workflow/prior_check.smk)")
        s.add_argument("--prior", required=True, help="the prior check (docs/prior_check/prior_check.nc)")
        s.add_argument("--out", required=True, help="output .png" if "figure" in name else "output .md")
        s.set_defaults(func=func)

    ol = sub.add_parser("one-loop", help="the one-loop correction against the measured finite-size gaps: "
                                         "predictions, figure, page (workflow/one_loop.smk; docs/one_loop.md)")
    os_ = ol.add_subparsers(dest="what", required=True, metavar="<step>")
    s = os_.add_parser("predict", help="corrected and uncorrected posterior means at one study's measured points "
                                       "-> netCDF")
    s.add_argument("--study", required=True, choices=ONE_LOOP_STUDIES)
    s.add_argument("--studies", help="the studies' results JSON (docs/studies/studies.json; finite_size, finite_L)")
    s.add_argument("--base", help="the studies' base config (config/studies/base.yaml; finite_size, finite_L)")
    s.add_argument("--spec", help="the studies' spec (config/studies.yaml): its seeds are the runs whose training "
                                  "sets the one_loop_g variant and the per-dataset one loop use (finite_size, "
                                  "finite_L)")
    s.add_argument("--results", help="a results JSON, e.g. docs/results.json (converged)")
    s.add_argument("--recipe", default="hmc", help="the recipe whose prior-started chains are measured (default hmc: "
                   "the reference posterior)")
    s.add_argument("--coarse", type=int, help="sub-grid size of the correction (default: the theory's setting)")
    s.add_argument("--attention", choices=["linear", "softmax"], default="linear",
                   help="softmax: âG at the finite-size study's points (Eqs. (32), (35))")
    s.add_argument("--out", required=True, help="output .nc")
    s = os_.add_parser("figure", help="fig_one_loop_gaps.png with its provenance sidecar")
    s.add_argument("--finite-size", required=True, help="predictions at the finite-size study's points")
    s.add_argument("--finite-L", required=True, help="predictions at the d_k = 2L study's points")
    s.add_argument("--out", required=True, help="output .png")
    s = os_.add_parser("dataset-figure", help="the per-dataset one loop against the equivalent-kernel one and the "
                                              "measured gaps, from one predictions file (png + provenance sidecar)")
    s.add_argument("--predictions", required=True, help="predictions with the per-dataset variant (converged: "
                                                        "linear; finite_size_softmax: softmax)")
    s.add_argument("--out", required=True, help="output .png")
    s = os_.add_parser("remainder-figure", help="what the pooling-sector one loop leaves of the ĉG gap against "
                                                "L/d_k, from the three linear studies (png + provenance sidecar)")
    s.add_argument("--finite-size", required=True, help="predictions at the finite-size study's points")
    s.add_argument("--finite-L", required=True, help="predictions at the d_k = 2L study's points")
    s.add_argument("--converged", required=True, help="predictions at the converged study's points")
    s.add_argument("--out", required=True, help="output .png")
    s = os_.add_parser("page", help="the Markdown page (docs/one_loop.md) with its provenance record")
    s.add_argument("--finite-size", required=True, help="predictions at the finite-size study's points")
    s.add_argument("--finite-L", required=True, help="predictions at the d_k = 2L study's points")
    s.add_argument("--check", help="the finite-size predictions on another sub-grid (optional)")
    s.add_argument("--converged", help="predictions at the converged study's points (optional)")
    s.add_argument("--softmax", help="the finite-size study's softmax predictions (optional)")
    s.add_argument("--out", required=True, help="output .md")
    ol.set_defaults(func=_cmd_one_loop)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="research", description="The research package's commands (src/research): "
                                "the side studies beyond the paper, built on copyhead. `python -m research "
                                "<command> --help` describes one.")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="<command>")
    register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    return run(argv, build_parser())
