"""The theory's side workflows: the phase map and the prior check (workflow/phase_map.smk), the one-loop
correction at the studies' points (workflow/one_loop.smk), and the design's reference table.

Each command parses its arguments and calls one package function, imported inside the command's function
(when it runs: scipy, xarray and matplotlib are paid for only by the commands that use them).
"""
from __future__ import annotations

from ..config import ConfigError

ONE_LOOP_STUDIES = ("finite_size", "finite_L", "converged")


def _cmd_phase_map(a) -> int:
    if a.what == "map":
        from ..theory.phase_map_output import write_map
        write_map(a.out)
    elif a.what == "exact":
        from ..theory.phase_map_output import write_exact
        write_exact(a.map, a.out)
    elif a.what == "figures":
        from ..figures.phase_map import write_figures
        write_figures(a.map, a.exact, a.prior, a.out_dir)
    else:
        from ..results.phase_map_page import write_page
        write_page(a.map, a.exact, a.prior, a.out)
    return 0


def _cmd_prior_check(a) -> int:
    from ..theory.phase_map_output import write_check
    write_check(a.out)
    return 0


def _cmd_one_loop(a) -> int:
    if a.what == "predict":
        need = ("results",) if a.study == "converged" else ("studies", "base", "spec")
        missing = [f"--{k}" for k in need if not getattr(a, k)]
        if missing:
            raise ConfigError(f"copyhead one-loop predict --study {a.study} needs {', '.join(missing)}")
        if a.study == "converged" and a.attention != "linear":
            raise ConfigError("copyhead one-loop predict --study converged compares linear attention only")
        from ..analysis.one_loop_points import read_points
        from ..theory.one_loop.predict_output import write_predictions
        read = read_points(a.study, studies=a.studies, base=a.base, spec=a.spec, results=a.results,
                           attention=a.attention, recipe=a.recipe)
        write_predictions(a.out, coarse=a.coarse, attention=a.attention, **read)
    elif a.what == "figure":
        from ..figures.one_loop import write
        write(a.finite_size, a.finite_L, a.out)
    elif a.what == "dataset-figure":
        from ..figures.one_loop import write_dataset
        write_dataset(a.predictions, a.out)
    elif a.what == "remainder-figure":
        from ..figures.one_loop import write_remainder
        write_remainder(a.finite_size, a.finite_L, a.converged, a.out)
    else:
        from ..results.one_loop_page import write_page
        write_page(a.finite_size, a.finite_L, a.out, check=a.check, converged=a.converged, softmax=a.softmax)
    return 0


def _cmd_reference(a) -> int:
    from ..theory.reference import check, reference_table, table_text
    rows = reference_table(include_exact=not a.closed_form_only)
    print(table_text(rows))
    return 0 if all(check(r) for r in rows) else 1


def register(sub) -> None:
    pm = sub.add_parser("phase-map", help="the phase map over (L, V, d_k): closed-form map, exact slice, figures, "
                                          "page (workflow/phase_map.smk; docs/phase_map.md)")
    ps = pm.add_subparsers(dest="what", required=True, metavar="<step>")
    s = ps.add_parser("map", help="closed-form linear crossover / softmax copy point on every (path, L, V, prior) "
                                  "-> netCDF")
    s.add_argument("--out", required=True, help="output .nc (docs/phase_map/map.nc)")
    s = ps.add_parser("exact", help="the exact dataset average on the V = 16 slice of the map -> netCDF")
    s.add_argument("--map", required=True, help="the closed-form map (phase-map map)")
    s.add_argument("--out", required=True, help="output .nc (docs/phase_map/exact.nc)")
    s = ps.add_parser("figures", help="fig_phase_map.png and fig_prior_check.png with provenance sidecars")
    s.add_argument("--map", required=True, help="the closed-form map")
    s.add_argument("--exact", required=True, help="the exact slice")
    s.add_argument("--prior", help="the prior check (prior-check); without it, no fig_prior_check.png")
    s.add_argument("--out-dir", required=True, help="output folder (docs/phase_map)")
    s = ps.add_parser("page", help="the Markdown page (docs/phase_map.md) with its provenance record")
    for k, h in (("map", "the closed-form map"), ("exact", "the exact slice"), ("prior", "the prior check")):
        s.add_argument(f"--{k}", required=True, help=h)
    s.add_argument("--out", required=True, help="output .md (docs/phase_map.md)")
    pm.set_defaults(func=_cmd_phase_map)

    pc = sub.add_parser("prior-check", help="the prior of the order parameters at d_k < L checked by sampling, and "
                                            "its effect on the transitions -> netCDF (docs/phase_map/prior_check.nc)")
    pc.add_argument("--out", required=True, help="output .nc")
    pc.set_defaults(func=_cmd_prior_check)

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

    rf = sub.add_parser("reference", help="the design's reference behaviour (Sec. 6) recomputed, side by side; "
                                          "exit status 1 if a row is off")
    rf.add_argument("--closed-form-only", action="store_true", help="skip the exact-average rows (slower)")
    rf.set_defaults(func=_cmd_reference)
