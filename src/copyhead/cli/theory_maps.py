"""The theory's side workflow, the phase map (workflow/phase_map.smk), and the design's reference table.
(The one-loop correction and the prior check are research: ``python -m research one-loop|prior-check``,
:mod:`research.cli`.)

Each command parses its arguments and calls one package function, imported inside the command's function
(when it runs: scipy, xarray and matplotlib are paid for only by the commands that use them).
"""
from __future__ import annotations


def _cmd_phase_map(a) -> int:
    if a.what == "map":
        from ..theory.phase_map_output import write_map
        write_map(a.out)
    elif a.what == "exact":
        from ..theory.phase_map_output import write_exact
        write_exact(a.map, a.out)
    elif a.what == "figures":
        from ..figures.phase_map import write_figures
        write_figures(a.map, a.exact, a.out_dir)
    else:
        from ..results.phase_map_page import write_page
        write_page(a.map, a.exact, a.out)
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
    s = ps.add_parser("figures", help="fig_phase_map.png with its provenance sidecar")
    s.add_argument("--map", required=True, help="the closed-form map")
    s.add_argument("--exact", required=True, help="the exact slice")
    s.add_argument("--out-dir", required=True, help="output folder (docs/phase_map)")
    s = ps.add_parser("page", help="the Markdown page (docs/phase_map.md) with its provenance record")
    for k, h in (("map", "the closed-form map"), ("exact", "the exact slice")):
        s.add_argument(f"--{k}", required=True, help=h)
    s.add_argument("--out", required=True, help="output .md (docs/phase_map.md)")
    pm.set_defaults(func=_cmd_phase_map)

    rf = sub.add_parser("reference", help="the design's reference behaviour (Sec. 6) recomputed, side by side; "
                                          "exit status 1 if a row is off")
    rf.add_argument("--closed-form-only", action="store_true", help="skip the exact-average rows (slower)")
    rf.set_defaults(func=_cmd_reference)
