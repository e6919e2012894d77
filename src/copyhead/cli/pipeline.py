"""The main pipeline's commands: train, theory, theory-datasets, aggregate, summary, figure, results,
check-config, audit (the rules of the Snakefile call these)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from .. import config as cfgmod
from ..audit import main as audit_main
from ..provenance import read_dataset, require_kind
from ..publish import publish_aggregates


def _load_config(path: str) -> dict:
    return cfgmod.load(path)


def _cmd_train(a) -> int:
    seeds = a.seeds if a.seeds is not None else ([a.seed] if a.seed is not None else None)
    Ps = a.P
    if a.run_config:
        try:
            run_cfg = json.loads(a.run_config)
        except json.JSONDecodeError as e:
            raise cfgmod.ConfigError(f"--run-config is not valid JSON: {e}") from None
        run_cfg = cfgmod.validate_run_config(run_cfg)
        Ps = Ps if Ps is not None else ([run_cfg["P"]] if "P" in run_cfg else None)
        seeds = seeds if seeds is not None else ([run_cfg["seed"]] if "seed" in run_cfg else None)
    else:
        if None in (a.attention, a.optimizer):
            raise cfgmod.ConfigError("copyhead train needs --attention, --optimizer, --P and --seed/--seeds "
                                     "(or --run-config)")
        run_cfg = cfgmod.run_config(_load_config(a.config), a.attention, a.optimizer)
    if Ps is None or seeds is None:
        raise cfgmod.ConfigError("copyhead train needs --P and --seed (one run) or --seeds (a batch)")
    from ..run import points, train_job, train_points    # torch: imported only now, the config is valid
    try:
        pts = points(Ps, seeds, a.out)
    except ValueError as e:
        raise cfgmod.ConfigError(str(e)) from None
    if len(pts) == 1:
        train_job(run_cfg, *pts[0], device=a.device)
    else:
        train_points(run_cfg, pts, device=a.device)     # a packed group: every P in one program
    return 0


def _cmd_theory(a) -> int:
    if a.theory_config:
        th_cfg = json.loads(a.theory_config)
    else:
        th_cfg = cfgmod.theory_config(_load_config(a.config))
    from ..theory.output import write_theory
    write_theory(th_cfg, a.attention, Path(a.out))
    return 0


def _cmd_theory_datasets(a) -> int:
    from ..theory.output import write_same_dataset_theory
    from ..theory.same_dataset import sweep_pairs
    if a.theory_config:
        th_cfg = json.loads(a.theory_config)
        pairs = json.loads(a.pairs) if a.pairs else None
    else:
        cfg = _load_config(a.config)
        th_cfg = cfgmod.theory_config(cfg)
        pairs = json.loads(a.pairs) if a.pairs else sweep_pairs(cfg, a.attention)
    if not pairs:
        raise cfgmod.ConfigError("no (P, seed) pairs: give --pairs '[[P, seed], ...]' or a config with a sweep")
    write_same_dataset_theory(th_cfg, a.attention, [(int(P), int(s)) for P, s in pairs], Path(a.out))
    return 0


def _cmd_aggregate(a) -> int:
    if a.run_configs:
        run_configs = json.loads(a.run_configs)
    elif a.config:
        cfg = _load_config(a.config)
        run_configs = {opt: cfgmod.run_config(cfg, a.attention, opt) for opt in cfg["sweep"].get(a.attention, {})}
    else:
        run_configs = None
    from ..aggregate import aggregate_runs
    aggregate_runs([Path(p) for p in a.runs], Path(a.out), attention=a.attention, strict=a.strict,
                   run_configs=run_configs)
    return 0


def _cmd_summary(a) -> int:
    for path in a.aggregates:
        require_kind(path, "aggregate")
    from ..aggregate import summary_table
    for path in a.aggregates:
        print(summary_table(read_dataset(path)))
        print()
    return 0


# figure input role prefix -> the copyhead_kind of its file (where they differ)
_ROLE_KINDS = {"datasets": "theory_datasets"}


def _checked_inputs(text: str) -> dict:
    """Input role -> path from JSON, each file checked to be the copyhead kind its role names (roles are
    <kind>_<attention>, e.g. aggregate_linear, datasets_softmax) before any work is done."""
    inputs = json.loads(text)
    for role, path in sorted(inputs.items()):
        kind, _, attention = role.partition("_")
        require_kind(path, _ROLE_KINDS.get(kind, kind), attention or None)
    return inputs


def _cmd_figure(a) -> int:
    inputs = _checked_inputs(a.inputs)
    from ..figures import make_figure
    make_figure(a.name, inputs, Path(a.out), json.loads(a.options or "{}"), results=a.results)
    return 0


def _cmd_results(a) -> int:
    if a.tables:
        from ..results import write_pages
        write_pages(Path(a.tables), Path(a.out), figure_dir=a.figure_dir, studies=a.studies or ())
        return 0
    if not a.inputs:
        raise SystemExit("copyhead results: give --inputs (to compute the results) or --tables (to render them)")
    inputs = _checked_inputs(a.inputs)
    cfg = cfgmod.validate(json.loads(a.config_json)) if a.config_json else (
        _load_config(a.config) if a.config else None)
    from ..results import write_results
    write_results({k: Path(v) for k, v in inputs.items()}, Path(a.out), config=cfg,
                  config_name=a.config_name or a.config or "", figure_dir=a.figure_dir)
    return 0


def _cmd_publish_aggregates(a) -> int:
    print(f"published to {publish_aggregates(a.study, a.config, a.docs, a.name)}")
    return 0


def _cmd_check_config(a) -> int:
    """Every file is checked and reported (ok, or each of its problems); exit 2 if any is bad."""
    from ..resources import check_sweep_fits
    bad = 0
    for path in a.configs:
        try:
            check_sweep_fits(cfgmod.load(path), path)   # a point no machine can hold
            print(f"{path}: ok")
        except cfgmod.ConfigError as e:
            bad += 1
            print(f"copyhead check-config: error: {e}", file=sys.stderr)
    if bad:
        print(f"{bad} of {len(a.configs)} config file(s) invalid", file=sys.stderr)
    return 2 if bad else 0


def _cmd_audit(a) -> int:
    return audit_main(a)



def register(sub) -> None:
    t = sub.add_parser("train", help="train the seeds of one (attention, optimizer, P) as one batch of "
                                     "chains -> one netCDF file per seed (several P: one packed program)")
    t.add_argument("--config", default="config.yaml", help="config file (default: config.yaml)")
    t.add_argument("--run-config", help="resolved run config as JSON (what the workflow passes)")
    t.add_argument("--attention", choices=cfgmod.ATTENTIONS)
    t.add_argument("--optimizer", help="recipe name, a key of 'optimizers' in the config")
    t.add_argument("--P", type=int, nargs="+", help="training-set size (sequences); several: every (P, seed) "
                                                    "of the recipe in one batched program, --out P-major")
    t.add_argument("--seed", type=int, help="one run")
    t.add_argument("--seeds", type=int, nargs="+", help="a batch: one chain per seed (one --out each)")
    t.add_argument("--device", choices=["auto", "cpu", "cuda"], help="override numerics.device")
    t.add_argument("--out", required=True, nargs="+",
                   help="output .nc file(s), one per seed in the order of --seeds (written atomically); with "
                        "several P one per (P, seed), every seed of the first P first")
    t.set_defaults(func=_cmd_train)

    th = sub.add_parser("theory", help="theory predictions for one attention type -> netCDF")
    th.add_argument("--attention", choices=cfgmod.ATTENTIONS, required=True)
    th.add_argument("--config", default="config.yaml")
    th.add_argument("--theory-config", help="theory config subset as JSON (what the workflow passes)")
    th.add_argument("--out", required=True)
    th.set_defaults(func=_cmd_theory)

    td = sub.add_parser("theory-datasets", help="same-dataset theory: the exact action's minima on each run's "
                                                 "own training set, per (P, seed) -> netCDF")
    td.add_argument("--attention", choices=cfgmod.ATTENTIONS, required=True)
    td.add_argument("--config", default="config.yaml")
    td.add_argument("--theory-config", help="theory config subset as JSON (what the workflow passes)")
    td.add_argument("--pairs", help="JSON list of [P, seed] (default: every run of the config's sweep)")
    td.add_argument("--out", required=True)
    td.set_defaults(func=_cmd_theory_datasets)

    ag = sub.add_parser("aggregate", help="combine run files of one attention type into one Dataset")
    ag.add_argument("--attention", choices=cfgmod.ATTENTIONS, required=True)
    ag.add_argument("--out", required=True)
    ag.add_argument("--strict", action="store_true",
                    help="refuse runs made by different training code or another config, and runs with "
                         "non-finite values (default: flag them and warn; the last two are never averaged in)")
    ag.add_argument("--config", help="check each run's defining config against this config file's")
    ag.add_argument("--run-configs", help="the same as JSON, recipe -> run config (what the workflow passes)")
    ag.add_argument("runs", nargs="+", help="run .nc files")
    ag.set_defaults(func=_cmd_aggregate)

    su = sub.add_parser("summary", help="print seed means ± sem per optimizer and P from aggregate files")
    su.add_argument("aggregates", nargs="+", help="results/aggregate/{linear,softmax}.nc")
    su.set_defaults(func=_cmd_summary)

    f = sub.add_parser("figure", help="make one figure (pdf + png + provenance sidecar)")
    f.add_argument("name", help="figure name, e.g. fig3_linear_order_params")
    f.add_argument("--inputs", required=True, help="JSON mapping of input role -> path")
    f.add_argument("--options", help="JSON figure options")
    f.add_argument("--results", help="the results JSON (copyhead results) whose transitions the figure marks")
    f.add_argument("--out", required=True, help="output .pdf (the .png and sidecar go beside it)")
    f.set_defaults(func=_cmd_figure)

    rs = sub.add_parser("results", help="the results document (agreement, transitions, convergence) -> "
                                        "Markdown + JSON")
    rs.add_argument("--inputs", help="JSON mapping of role -> path: aggregate_<att>, theory_<att>, datasets_<att>")
    rs.add_argument("--tables", help="render the pages from this results JSON instead of computing it")
    rs.add_argument("--studies", nargs="*", help="with --tables: studies reports' JSON (docs/studies*/studies.json) "
                                                 "whose findings the page's Studies section quotes")
    rs.add_argument("--config", help="the config file that produced the inputs (recipe settings on the page)")
    rs.add_argument("--config-json", help="the same as validated JSON (what the workflow passes)")
    rs.add_argument("--config-name", help="how the page names that config (default: the --config path)")
    rs.add_argument("--figure-dir", default="../results/figures",
                    help="figure links, relative to the output's folder")
    rs.add_argument("--out", required=True, help="output .json (the results) or .md (the page and its appendix; "
                                                  "with --inputs the .json goes beside it)")
    rs.set_defaults(func=_cmd_results)

    au = sub.add_parser("audit", help="verify a figure's chain of inputs back to the runs, or a published "
                                      "file (docs/) against its record, its committed inputs and the code")
    au.add_argument("figures", nargs="*", help="figure files (.pdf/.png) or their .provenance.json under "
                                               "--results; any other file is audited as a published product")
    au.add_argument("--docs", metavar="DIR", help="audit every published file under DIR (e.g. docs): fails on "
                                                  "a hand-edited product, one older than a committed input, or "
                                                  "a page, table or figure whose numbers the current code "
                                                  "changes (made again into a scratch copy and compared)")
    au.add_argument("--accept", action="store_true",
                    help="re-stamp the published products made by other code whose numbers, made again with the "
                         "current code, are the same (a versioned input, e.g. a .nc file, only when named); "
                         "refuse, naming the numbers, where they differ")
    au.add_argument("--no-regenerate", action="store_true",
                    help="with --docs: do not make products again to compare their numbers (other code is then "
                         "a problem)")
    au.add_argument("--all", action="store_true", help="audit every figure under --results/figures")
    au.add_argument("--results", default="results", help="results folder (default: results)")
    au.add_argument("--json", action="store_true", help="machine-readable output")
    au.add_argument("--config", help="the config the products should match (default: config.yaml beside the "
                                     "results folder)")
    au.add_argument("--strict", action="store_true",
                    help="also fail on warnings (stale products, mixed code versions, dirty working tree)")
    au.add_argument("--remake", action="store_true",
                    help="with --docs: remake the products made by other code (and what is made from them) with "
                         "the command the audit prints (snakemake -s workflow/docs.smk --forcerun ...), which "
                         "works without Snakemake's own records of the code (a fresh clone), then audit again")
    au.add_argument("--cores", type=int, default=2, help="cores for --remake (default: 2)")
    au.add_argument("--snakemake-args", default="",
                    help="more arguments for --remake's snakemake, as one shell-quoted string (a target, "
                         "--config converged_config=FILE, --dry-run)")
    au.add_argument("--fix", action="store_true",
                    help="remove products whose checksum or netCDF format is broken (and stale temporary "
                         "files), so that the next `snakemake` makes them again")
    au.set_defaults(func=_cmd_audit)

    pa = sub.add_parser("publish-aggregates", help="copy a study's aggregates to DOCS/data/<name>/ (the committed "
                                                   "inputs of the results page: snakemake -s workflow/docs.smk)")
    pa.add_argument("study", help="the study's folder (e.g. studies/converged)")
    pa.add_argument("--config", required=True, help="the config the study ran (e.g. config/converged.yaml)")
    pa.add_argument("--docs", default="docs", help="the docs folder (docs)")
    pa.add_argument("--name", default="converged", help="one plain folder name under DOCS/data (converged)")
    pa.set_defaults(func=_cmd_publish_aggregates)

    cc = sub.add_parser("check-config", help="validate config files (YAML errors with file and line)")
    cc.add_argument("configs", nargs="+", help="config .yaml files")
    cc.set_defaults(func=_cmd_check_config)
