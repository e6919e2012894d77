"""End-to-end Snakemake DAG on the tiny config, incremental reruns, bad input, and the audit chain.

One session-scoped fixture runs the whole DAG once (every rule, every figure) in a temporary copy of the
workflow; the other tests dry-run edits of its config against that finished state, or audit/tamper with
copies of its results.
"""
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests/configs/tiny.yaml"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def _copy_workflow(dest: Path, cfg: dict | None = None) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Snakefile", dest / "Snakefile")
    shutil.copytree(ROOT / "workflow", dest / "workflow", symlinks=False, dirs_exist_ok=True)
    shutil.copytree(ROOT / "envs", dest / "envs", dirs_exist_ok=True)
    (dest / "config.yaml").write_text(yaml.safe_dump(cfg if cfg is not None else yaml.safe_load(TINY.read_text()),
                                                     sort_keys=False))
    return dest


def smk(wd: Path, *args, check=True, env=None):
    r = subprocess.run([*SNAKEMAKE, "--cores", "2", *args], cwd=wd, capture_output=True, text=True, timeout=900,
                       env=None if env is None else {**os.environ, **env})
    if check and r.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({r.returncode}):\n{r.stdout[-4000:]}\n"
                             f"{r.stderr[-6000:]}")
    return r


def planned_jobs(wd: Path, env=None) -> dict[str, int]:
    """Rule -> number of jobs a dry run schedules (from Snakemake's job stats table)."""
    r = smk(wd, "-n", env=env)
    out = r.stdout + r.stderr
    if "Nothing to be done" in out:
        return {}
    m = re.search(r"Job stats:\n(.*?)\n\s*\n", out, re.S)
    assert m, out
    jobs = {}
    for line in m.group(1).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] != "total":
            jobs[parts[0]] = int(parts[1])
    return jobs


def train_jobs(jobs: dict[str, int]) -> dict[str, int]:
    """The training rules (one per swept attention and recipe: train_<attention>_<recipe>) of a plan."""
    return {k: v for k, v in jobs.items() if k.startswith("train_")}


@pytest.fixture(scope="session")
def pipeline(session_dir):
    """The whole DAG, run in a folder whose path has a space and a non-ASCII letter (every path in every
    rule is quoted; an unquoted one cut the path at the space). One for the whole session: under
    pytest-xdist the first worker that needs it builds it (the others wait on the lock) and every worker
    reads it. The tests only read it (dry runs and audits in place); what edits or remakes works on a copy
    (``_edit``, ``_copy``)."""
    wd = session_dir / "sp ace é" / "wk"
    done, failed = session_dir / "pipeline.done", session_dir / "pipeline.failed"
    with open(session_dir / "pipeline.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)          # released when the file closes
        if failed.exists():
            raise AssertionError(f"the tiny DAG failed in another worker of this session:\n{failed.read_text()}")
        if not done.exists():
            try:
                smk(_copy_workflow(wd))
            except BaseException as err:
                failed.write_text(str(err))
                raise
            done.touch()
    return wd


def _copy(pipeline: Path, tmp_path: Path) -> Path:
    """A copy of the finished pipeline (results, metadata and all), for a test that writes to it."""
    wd = tmp_path / "wd"
    shutil.copytree(pipeline, wd, symlinks=True)
    return wd


def _edit(pipeline: Path, tmp_path: Path, edit) -> Path:
    """A copy of the finished pipeline (results, metadata and all) with an edited config."""
    wd = _copy(pipeline, tmp_path)
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    edit(cfg)
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return wd


FIGS = ["fig1_stages", "fig2_landscapes", "fig3_linear_order_params", "fig3b_linear_diagnostics",
        "fig4_softmax_order_params", "fig4b_softmax_diagnostics", "fig5_coverage", "fig6_linear_loss_curves",
        "fig7_softmax_loss_curves", "fig8_scaling"]


def test_end_to_end_every_output(pipeline):
    cfg = yaml.safe_load((pipeline / "config.yaml").read_text())
    import copyhead.config as c
    for att, opt, P, seed in c.runs(c.validate(cfg)):
        assert (pipeline / f"results/runs/{att}/{opt}/P{P}/seed{seed}.nc").stat().st_size > 0
    for att in ("linear", "softmax"):
        assert (pipeline / f"results/aggregate/{att}.nc").exists()
        assert (pipeline / f"results/theory/{att}.nc").exists()
    for f in FIGS:
        for ext in ("pdf", "png", "provenance.json"):
            assert (pipeline / f"results/figures/{f}.{ext}").stat().st_size > 0, f
    assert list((pipeline / "results/benchmarks/train").rglob("*.tsv"))


def test_aggregate_has_every_run_and_status(pipeline):
    from copyhead.provenance import read_dataset
    ag = read_dataset(pipeline / "results/aggregate/linear.nc")
    assert set(ag["optimizer"].values) == {"adam", "sgld", "sgld_diverge", "hmc"}
    assert list(ag["P"].values) == [4, 8]
    # the sweep has sgld with seed 0 only: seed 1 is present as 'absent', not dropped
    assert ag["status"].sel(optimizer="sgld", seed=1).values.tolist() == ["absent", "absent"]
    assert (ag["status"].sel(optimizer="adam") == "ok").all()
    assert {"c1_mean", "c1_sem", "cG_mean", "n_ok", "test_loss"} <= set(ag.data_vars)
    inputs = json.loads(ag.attrs["inputs_json"])
    assert len(inputs) == 9
    # the HMC runs carry their sampler's record (acceptance after warm-up, divergences)
    acc = ag["hmc_accept_rate"].sel(optimizer="hmc", seed=0).values
    assert np.all((acc > 0.3) & (acc < 1)) and (ag["hmc_divergent"].sel(optimizer="hmc", seed=0) == 0).all()
    # the diverged run is kept: status, NaN results, its curve up to the divergence
    d = ag.sel(optimizer="sgld_diverge", P=4, seed=0)
    assert str(d["status"].values) == "diverged" and ag.attrs["n_diverged"] == 1
    assert np.isnan(float(d["c1"])) and np.isfinite(d["train_loss"].values).any()
    assert int(ag["n_ok"].sel(optimizer="sgld_diverge", P=4)) == 0


def test_diverged_run_is_shown_on_figures(pipeline):
    log = (pipeline / "results/logs/figures/fig3_linear_order_params.log").read_text()
    assert "Traceback" not in log
    import copyhead.figures as f
    from copyhead.provenance import read_dataset
    assert f._status_note(read_dataset(pipeline / "results/aggregate/linear.nc")) == "1 diverged run(s) excluded"


def test_report_renders(pipeline, tmp_path):
    wd = _copy(pipeline, tmp_path)               # the report is written into results/
    smk(wd, "--report", "results/report.html")
    html = (wd / "results/report.html").read_text(errors="ignore")
    assert "fig4_softmax_order_params" in html
    # captions are reStructuredText: "|z|" would be an undefined substitution, embedded as an ERROR
    for needle in ("System Message", "ERROR/3", "Undefined substitution"):
        assert needle not in html, needle


def test_no_change_schedules_nothing(pipeline):
    assert planned_jobs(pipeline) == {}


def test_the_pipeline_ran_under_a_path_with_a_space(pipeline):
    assert " " in str(pipeline) and "é" in str(pipeline)
    assert (pipeline / "results/docs/results.md").stat().st_size > 0      # the rule that broke at the space
    assert not (pipeline / "docs").exists()          # the main pipeline reads nothing under docs/


def test_the_pipeline_page_points_to_the_studies_for_the_scaling_claims(pipeline):
    """Without studies reports (the main pipeline has none), the page says where the scaling claims are
    answered instead of answering them from one size."""
    text = (pipeline / "results/docs/results.md").read_text()
    assert "scaling claims" in text and "`docs/results.md` of the repository" in text
    assert "softmax jump against L)" not in text        # no scaling row in the claims table


def _code(line: str) -> str:
    """A workflow line without its comment (a whole-line comment, or one after two spaces)."""
    return "" if line.lstrip().startswith("#") else line.split("  #")[0]


def test_the_main_workflow_names_no_path_under_docs():
    """The default workflow (Snakefile, workflow/rules/*.smk) is made from the config alone: no rule reads
    or writes the repository's docs/ (results/docs/ is its own output folder). A path in code is a string that
    starts with docs (or ./docs, /docs: joined to a folder); comments and docstrings may cite docs/*.md."""
    docs = re.compile(r"""["'](?:\./|/)?docs(?:/|["'])""")
    files = [ROOT / "Snakefile", *sorted((ROOT / "workflow/rules").glob("*.smk"))]
    hits = [f"{f.relative_to(ROOT)}:{i}: {line.strip()}" for f in files
            for i, line in enumerate(f.read_text().splitlines(), 1) if docs.search(_code(line))]
    assert not hits, hits
    assert docs.search(_code('STUDY = sorted(Path(basedir).glob("docs/studies*/studies.json"))'))
    assert docs.search(_code('root = os.path.join(workflow.basedir, "docs")'))
    assert not docs.search(_code('md="results/docs/results.md",  # "docs/results.md" is a copy'))
    assert not docs.search(_code('"""sbatch -p from the environment (docs/slurm.md)."""'))


@pytest.mark.long       # trains the tiny sweep packed, then per P
def test_switching_packed_training_on_and_off_reruns_nothing(pipeline, tmp_path):
    """COPYHEAD_TRAIN_PACK=recipe is an execution detail: a DAG made per P is up to date packed, and one
    trained packed is up to date per P (same files, same recorded params and shell command)."""
    packed = {"COPYHEAD_TRAIN_PACK": "recipe"}
    assert planned_jobs(pipeline, env=packed) == {}
    wd = _copy_workflow(tmp_path / "packed")
    runs = [str(p.relative_to(pipeline)) for p in (pipeline / "results/runs").rglob("*.nc")]
    smk(wd, *runs, env=packed)                      # train every run in packed mode (one job per recipe)
    assert (wd / "results/logs/train/linear/adam/packed.log").is_file()
    assert train_jobs(planned_jobs(wd)) == {}
    assert train_jobs(planned_jobs(wd, env=packed)) == {}


def test_adding_one_P_schedules_only_its_runs(pipeline, tmp_path):
    def edit(cfg):
        cfg["sweep"]["linear"]["adam"]["P"].append(12)
    jobs = planned_jobs(_edit(pipeline, tmp_path, edit))
    assert train_jobs(jobs) == {"train_linear_adam": 1}     # P=12: one job trains seeds 0 and 1
    assert jobs.get("aggregate") == 1        # linear only
    assert "theory" not in jobs
    assert "fig7_softmax_loss_curves" not in jobs and "fig2_landscapes" not in jobs
    assert jobs.get("fig3_linear_order_params") == 1


def test_sgld_setting_reruns_only_sgld(pipeline, tmp_path):
    def edit(cfg):
        cfg["optimizers"]["sgld"]["eta"] = 5e-4
    jobs = planned_jobs(_edit(pipeline, tmp_path, edit))
    # linear sgld P4,P8 + softmax sgld P4,P8 (not sgld_copy, not adam)
    assert train_jobs(jobs) == {"train_linear_sgld": 2, "train_softmax_sgld": 2}
    assert "theory" not in jobs


def test_adding_a_seed_reruns_its_jobs_and_keeps_the_other_seeds(pipeline, tmp_path):
    """A new seed reruns the (attention, recipe, P) jobs it belongs to; the seeds already there come out
    of the new batch with identical numbers."""
    from copyhead.provenance import read_dataset

    def edit(cfg):
        cfg["sweep"]["linear"]["sgld"]["seeds"] = [0, 1]
    wd = _edit(pipeline, tmp_path, edit)
    jobs = planned_jobs(wd)
    assert train_jobs(jobs) == {"train_linear_sgld": 2}      # P4 and P8, each now a batch of 2 chains
    smk(wd, "--forcerun", "train_linear_sgld", "--until", "train_linear_sgld")
    for P in (4, 8):
        old = read_dataset(pipeline / f"results/runs/linear/sgld/P{P}/seed0.nc")
        new = read_dataset(wd / f"results/runs/linear/sgld/P{P}/seed0.nc")
        assert new.attrs["batch_seeds"] == "0 1" and old.attrs["batch_seeds"] == "0"
        old.attrs, new.attrs = {}, {}
        assert old.identical(new), P
        assert (wd / f"results/runs/linear/sgld/P{P}/seed1.nc").exists()


def test_theory_setting_reruns_only_theory_and_figures(pipeline, tmp_path):
    def edit(cfg):
        cfg["theory"]["grid_n"] = 41
    jobs = planned_jobs(_edit(pipeline, tmp_path, edit))
    assert jobs.get("theory") == 2 and jobs.get("theory_datasets") == 2
    assert not train_jobs(jobs) and "aggregate" not in jobs
    assert set(jobs) - {"theory", "theory_datasets", "results_tables", "results_doc", "all"} <= set(FIGS)


def test_config_typo_fails_before_any_job(pipeline, tmp_path):
    def edit(cfg):
        cfg["optimizers"]["adam"]["learning_rate"] = 0.1
    wd = _edit(pipeline, tmp_path, edit)
    r = smk(wd, check=False)
    assert r.returncode != 0
    assert "optimizers.adam.learning_rate" in r.stdout + r.stderr


def test_lint_is_clean():
    r = subprocess.run([*SNAKEMAKE, "--lint"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "Congratulations" in r.stdout + r.stderr, r.stdout + r.stderr


# ------------------------------------------------------------------------------------------- audit
def _audit(wd, *args):
    return subprocess.run([sys.executable, "-m", "copyhead", "audit", *args], cwd=wd, capture_output=True,
                          text=True, timeout=300)


def test_clean_pipeline_audits_ok(pipeline):
    r = _audit(pipeline, "--all")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "10 ok, 0 with problems" in r.stdout                 # one per figure of the registry
    _audit_clean(pipeline)                       # no stale product: same code, same config
    j = json.loads(_audit(pipeline, "--json", "results/figures/fig3_linear_order_params.pdf").stdout)
    assert j[0]["ok"] and len(j[0]["runs"]) == 9
    assert sorted(r["status"] for r in j[0]["runs"]).count("diverged") == 1
    assert j[0]["runs"][0]["snakemake"]["rule"].startswith("train_")   # job record from .snakemake when present


def test_audit_names_products_made_with_another_config(pipeline, tmp_path):
    """`sed -i 's/sigma2: 0.1/sigma2: 0.2/' config.yaml` without rerunning: the audit says which products
    were made with the old value and what the config says now; --strict fails; the unedited config is
    clean (test_clean_pipeline_audits_ok), and nothing is removed by --fix for it."""
    wd = _copy(pipeline, tmp_path)
    assert "sigma2: 0.1" in (wd / "config.yaml").read_text()
    subprocess.run(["sed", "-i", "s/sigma2: 0.1/sigma2: 0.2/", "config.yaml"], cwd=wd, check=True)
    fig = "results/figures/fig3_linear_order_params.pdf"
    r = _audit(wd, "--strict", fig)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "made with model.sigma2 = 0.1, config.yaml now says 0.2" in r.stdout, r.stdout
    lines = [ln for ln in r.stdout.splitlines() if "model.sigma2" in ln]
    assert any("run file(s)" in ln for ln in lines) and any("theory" in ln for ln in lines), lines
    r = _audit(wd, fig)
    assert r.returncode == 0 and "config.yaml now says 0.2" in r.stdout
    (wd / "other.yaml").write_text((pipeline / "config.yaml").read_text())   # --config: the file it matches
    assert "now says" not in _audit(wd, "--strict", "--config", "other.yaml", fig).stdout
    (wd / "config.yaml").write_text("model: [")
    r = _audit(wd, fig)
    assert "config.yaml: invalid" in r.stdout and "recorded configs not compared" in r.stdout and r.returncode == 0


@pytest.mark.long       # a rerun of part of the DAG after each fault
def test_audit_detects_changed_and_missing_run(pipeline, tmp_path):
    wd = tmp_path / "wd"
    shutil.copytree(pipeline / "results", wd / "results")      # no .snakemake: audit works from files alone
    run = wd / "results/runs/linear/adam/P4/seed0.nc"
    data = bytearray(run.read_bytes())
    data[len(data) // 2] ^= 0xFF
    run.write_bytes(bytes(data))
    # every figure drawn from the linear aggregate fails, naming the run; the others still audit OK
    users = {f for f in FIGS if "aggregate_linear" in
             json.loads((wd / f"results/figures/{f}.provenance.json").read_text())["inputs"]}
    assert users == {"fig1_stages", "fig3_linear_order_params", "fig3b_linear_diagnostics", "fig5_coverage",
                     "fig6_linear_loss_curves", "fig8_scaling"}
    for fig in FIGS:
        r = _audit(wd, f"results/figures/{fig}.pdf")
        if fig in users:
            assert r.returncode == 1, fig
            assert "results/runs/linear/adam/P4/seed0.nc" in r.stdout and "changed" in r.stdout
        else:
            assert r.returncode == 0, fig + r.stdout
    run.unlink()
    r = _audit(wd, "results/figures/fig6_linear_loss_curves.pdf")
    assert r.returncode == 1 and "seed0.nc: missing" in r.stdout


def test_audit_corrupted_netcdf_is_named_not_a_traceback(pipeline, tmp_path):
    wd = tmp_path / "wd"
    shutil.copytree(pipeline / "results", wd / "results")
    agg = wd / "results/aggregate/softmax.nc"
    agg.write_bytes(agg.read_bytes()[:200])   # truncated
    r = _audit(wd, "results/figures/fig4_softmax_order_params.pdf")
    assert r.returncode == 1
    assert "results/aggregate/softmax.nc" in r.stdout and "Traceback" not in r.stdout + r.stderr


def test_audit_flags_mixed_code_versions(pipeline, tmp_path):
    import netCDF4
    wd = tmp_path / "wd"
    shutil.copytree(pipeline / "results", wd / "results")
    # re-stamp one run as made by another commit, then rebuild aggregate + figure from the files
    run = wd / "results/runs/softmax/adam/P4/seed0.nc"
    with netCDF4.Dataset(run, "a") as nc:
        nc.setncattr("code_version", "0123456789ab")
    from copyhead.aggregate import aggregate_runs
    from copyhead.figures import make_figure
    runs = sorted(str(p.relative_to(wd)) for p in (wd / "results/runs/softmax").rglob("*.nc"))
    import os
    cwd = os.getcwd()
    os.chdir(wd)
    try:
        aggregate_runs(runs, Path("results/aggregate/softmax.nc"), "softmax")
        make_figure("fig7_softmax_loss_curves", {"aggregate_softmax": "results/aggregate/softmax.nc"},
                    Path("results/figures/fig7_softmax_loss_curves.pdf"), {})
    finally:
        os.chdir(cwd)
    r = _audit(wd, "results/figures/fig7_softmax_loss_curves.pdf")
    assert "mixed code versions" in r.stdout and "0123456789ab" in r.stdout
    r = _audit(wd, "--strict", "results/figures/fig7_softmax_loss_curves.pdf")
    assert r.returncode == 1


# ----------------------------------------------------------------------- issue 12: reliability
def _fresh_workflow(dest: Path, cfg: dict | None = None) -> Path:
    """A copy of the workflow with its profile (profiles/default: rerun-incomplete, keep-going)."""
    wd = _copy_workflow(dest, cfg)
    shutil.copytree(ROOT / "profiles", wd / "profiles", dirs_exist_ok=True)
    return wd


def test_yaml_errors_through_snakemake_name_file_and_line(tmp_path):
    wd = _fresh_workflow(tmp_path / "wd")
    good = (wd / "config.yaml").read_text()
    (wd / "config.yaml").write_text("task: {V: 4, L: 6\nmodel: {}\n")
    r = smk(wd, "-n", check=False)
    assert r.returncode != 0 and "config.yaml, line 2, column" in r.stdout + r.stderr, r.stdout + r.stderr
    (wd / "config.yaml").write_text(good.replace("  adam:\n", "  adam:\n    lr: 0.5\n", 1))
    r = smk(wd, "-n", check=False)
    assert r.returncode != 0 and "duplicate key 'lr'" in r.stdout + r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize("text,needle", [("", "config.yaml: the config file is empty"),
                                         ("- a\n", "config.yaml: the config file holds a list")])
def test_empty_or_list_config_is_named(tmp_path, text, needle):
    wd = _fresh_workflow(tmp_path / "wd")
    (wd / "config.yaml").write_text(text)
    r = smk(wd, "-n", check=False)
    assert r.returncode != 0 and needle in r.stdout + r.stderr, r.stdout + r.stderr


def test_yaml_1_2_number_through_snakemake(tmp_path):
    wd = _fresh_workflow(tmp_path / "wd")
    (wd / "config.yaml").write_text(TINY.read_text().replace("lr: 0.01", "lr: 1e-2"))
    r = smk(wd, "-n", "-p", check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert '"lr":0.01' in r.stdout + r.stderr


def test_config_override_of_a_section_key(tmp_path):
    wd = _fresh_workflow(tmp_path / "wd")
    r = smk(wd, "-n", "-p", "--config", "model={d_k: 8, g_Q: 0.5}", check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout + r.stderr                     # the shell commands carry the merged, typed model
    assert '"d_k":8,' in out and '"g_Q":0.5,' in out and '"sigma2":0.1' in out, out[-3000:]
    r = smk(wd, "-n", "--config", "model={d_k: 8", check=False)
    assert r.returncode != 0 and "a space after each colon" in r.stdout + r.stderr


def test_leading_zero_targets_do_not_alias(tmp_path):
    wd = _fresh_workflow(tmp_path / "wd")
    for target in ("results/runs/linear/adam/P4/seed007.nc", "results/runs/linear/adam/P04/seed0.nc"):
        r = smk(wd, "-n", target, check=False)
        assert r.returncode != 0 and "No rule to produce" in r.stdout + r.stderr, target
    assert smk(wd, "-n", "results/runs/linear/adam/P4/seed0.nc").returncode == 0


def test_slurm_node_memory_is_asked_once_per_workflow_not_per_job(tmp_path):
    """Every copyhead command checks that its jobs fit the largest SLURM node before any compute. The
    workflow asks sinfo once (right after config validation) and its jobs inherit the answer: a sinfo that cannot reach a
    controller takes ~9 s to fail, which every job paid before. A stand-in sinfo counts its calls."""
    wd = _fresh_workflow(tmp_path / "wd")
    bin_dir, calls = tmp_path / "bin", tmp_path / "sinfo_calls"
    bin_dir.mkdir()
    (bin_dir / "sinfo").write_text(f"#!/bin/sh\necho \"$*\" >> '{calls}'\necho 64000\n")
    (bin_dir / "sinfo").chmod(0o755)
    # the Slurm executor plugin, where installed (the `slurm` extra), refuses to load where it finds sinfo
    # but neither sacct nor squeue: a stand-in squeue that nothing calls
    (bin_dir / "squeue").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "squeue").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "COPYHEAD_MAX_NODE_MEM_MB"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    targets = [f"results/runs/linear/adam/P{P}/seed0.nc" for P in (4, 8)]
    r = subprocess.run([*SNAKEMAKE, "--cores", "2", *targets], cwd=wd, capture_output=True, text=True,
                       timeout=900, env=env)
    assert r.returncode == 0, r.stderr[-4000:]
    assert all((wd / t).is_file() for t in targets)
    assert calls.read_text().splitlines() == ["-h -o %m"]      # the workflow's one query; none by the 2 jobs


def test_killed_snakemake_is_recovered_by_the_next_run(tmp_path):
    """kill -9 of snakemake (and its jobs) leaves its directory locks and, in a killed write, a temporary
    file; the next `snakemake` must run (no LockException) and remove the temporary file."""
    import os
    import signal
    import time
    wd = _fresh_workflow(tmp_path / "wd")
    target = "results/theory/linear.nc"
    p = subprocess.Popen([*SNAKEMAKE, "--cores", "1", target], cwd=wd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(600):
            if list((wd / ".snakemake/locks").glob("*.lock")) and \
                    list((wd / ".snakemake/copyhead-owners").glob("*")):
                break
            assert p.poll() is None, "snakemake ended before it could be killed"
            time.sleep(0.1)
    finally:
        os.killpg(p.pid, signal.SIGKILL)      # snakemake and the job it started
        p.wait()
    assert list((wd / ".snakemake/locks").glob("*.lock"))
    tmp = wd / "results/theory/.linear.nc.k1ll3d00.tmp"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text("half a netCDF")
    os.utime(tmp, (time.time() - 7200, time.time() - 7200))
    r = smk(wd, target)
    assert "removed the directory locks of a snakemake that was killed" in r.stdout + r.stderr
    assert (wd / target).exists() and not tmp.exists()
    assert not list((wd / ".snakemake/copyhead-owners").glob("*"))


def test_same_number_written_differently_reruns_nothing(pipeline, tmp_path):
    def edit(cfg):
        cfg["model"]["g_Q"] = 1                           # tiny.yaml says 1.0
        cfg["optimizers"]["adam"]["copy_beta"] = 3        # 3.0
        cfg["theory"]["P_min"] = 1                        # 1.0
    # the same plan as the unedited config (nothing, unless the package changed since the pipeline ran)
    assert planned_jobs(_edit(pipeline, tmp_path, edit)) == planned_jobs(pipeline)


def test_code_edits_rerun_exactly_their_products(pipeline, tmp_path, monkeypatch):
    """The package is copied beside the workflow and put first on PYTHONPATH; comment and docstring edits and
    a new function nobody calls rerun nothing (copyhead.fingerprint), a real edit inside a function a product
    reaches reruns the products that reach it (and what follows)."""
    pkg = tmp_path / "src/copyhead"
    shutil.copytree(ROOT / "src/copyhead", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "src"))
    wd = _edit(pipeline, tmp_path, lambda cfg: None)

    def edit(module, old, new):
        f = pkg / module
        text = f.read_text()
        assert old in text, (module, old)
        f.write_text(text.replace(old, new, 1))

    smk(wd)          # up to date with the copied code (the tree may have changed since the pipeline ran)
    assert planned_jobs(wd) == {}
    edit("aggregate.py", '"""Aggregation', '"""A reworded docstring. Aggregation')
    edit("aggregate.py", "\nimport json\n", "\n# a comment\nimport json\n")
    edit("theory/output.py", "\nimport json\n", "\nimport json  # comment\n")
    (pkg / "theory/scaling.py").write_text((pkg / "theory/scaling.py").read_text()
                                           + "\n\ndef unused_helper(a, b):\n    return a * b\n")
    assert planned_jobs(wd) == {}
    call = "    ds = aggregate_datasets(paths, attention"
    edit("aggregate.py", call, "    _edited = 1\n" + call)
    jobs = planned_jobs(wd)
    assert jobs.get("aggregate") == 2 and "theory" not in jobs and not any(k.startswith("train") for k in jobs)
    assert set(jobs) - {"aggregate", "all", "results_tables", "results_doc"} <= set(FIGS)
    edit("aggregate.py", "    _edited = 1\n" + call, call)
    edit("theory/output.py", "    ds = compute_theory(", "    _edited = 2\n    ds = compute_theory(")
    jobs = planned_jobs(wd)
    assert jobs.get("theory") == 2 and "aggregate" not in jobs
    assert not any(k.startswith("train") for k in jobs)


# ------------------------------------------ issue 17: damaged, non-finite, foreign results (real sequences)
def _audit_clean(wd):
    """`copyhead audit --all --strict` passes; the one warning allowed is the dirty working tree of a
    development checkout (the code version of every product then ends in -dirty; none on a clean clone)."""
    r = _audit(wd, "--all", "--strict")
    out = r.stdout + r.stderr
    assert "PROBLEM" not in out and "Traceback" not in out, out
    warnings = [line for line in out.splitlines() if "WARNING" in line and "dirty working tree" not in line]
    assert not warnings, out
    assert r.returncode == 0 or "dirty working tree" in out, out
    return r


def _rewrite_run(path: Path, **change):
    from copyhead.provenance import read_dataset, write_dataset
    ds = read_dataset(path).load()
    for v, value in change.items():
        ds[v] = ds[v] * 0 + value
    write_dataset(ds, path)


@pytest.mark.long       # audit --fix, then a rerun of the DAG below the damage
def test_fix_then_plain_snakemake_remakes_damaged_run_and_theory(pipeline, tmp_path):
    wd = _edit(pipeline, tmp_path, lambda cfg: None)
    run, theory = wd / "results/runs/linear/adam/P4/seed0.nc", wd / "results/theory/linear.nc"
    for f in (run, theory):
        f.write_bytes(f.read_bytes()[:300])                        # truncated (a crash, a full disk)
    r = _audit(wd, "--all", "--fix")
    assert "removed results/runs/linear/adam/P4/seed0.nc (unreadable netCDF file)" in r.stdout, r.stdout
    assert "removed results/aggregate/linear.nc (made from" in r.stdout      # and what was made from it
    assert not run.exists() and not theory.exists()
    out = smk(wd).stderr
    assert "Nothing to be done" not in out
    assert run.exists() and theory.exists()
    _audit_clean(wd)
    assert planned_jobs(wd) == {}


@pytest.mark.long       # two faults, two reruns of the DAG below them and four audits
def test_nonfinite_and_foreign_runs_are_left_out_named_refused_and_remade(pipeline, tmp_path):
    """Two faults at once, each a real sequence of commands on the tiny config: a NaN written into an ok
    run (adam P4 seed 0) and a run made with sigma2 = 0.2 copied in under a valid name (adam P8 seed 0).
    snakemake -> aggregate leaves both out and names them; --strict refuses; the audit fails naming them;
    --fix removes the first and quarantines the second; snakemake -> both trained again; audit clean."""
    import copyhead.config as c
    from copyhead.provenance import read_dataset
    from copyhead.run import train_run
    wd = _edit(pipeline, tmp_path, lambda cfg: None)
    nan_run, foreign_run = (wd / f"results/runs/linear/adam/P{P}/seed0.nc" for P in (4, 8))
    good = float(read_dataset(wd / "results/runs/linear/adam/P4/seed1.nc")["c1"])
    _rewrite_run(nan_run, c1=np.nan, c1_sample=np.nan)                       # status still ok
    other = c.validate(yaml.safe_load((wd / "config.yaml").read_text()))
    other["model"]["sigma2"] = 0.2
    train_run(c.run_config(other, "linear", "adam", 8, 0), tmp_path / "foreign.nc", log=lambda line: None)
    shutil.copy(tmp_path / "foreign.nc", foreign_run)
    r = smk(wd)                                               # the aggregate is remade from the new files
    assert "2 run(s) left out of every mean (1 linear nonfinite, 1 linear foreign)" in r.stderr, r.stderr[-3000:]
    ag = read_dataset(wd / "results/aggregate/linear.nc")
    p4, p8 = ag.sel(optimizer="adam", P=4), ag.sel(optimizer="adam", P=8)
    assert str(p4["status"].sel(seed=0).values) == "nonfinite" and str(p8["status"].sel(seed=0).values) == "foreign"
    assert int(p4["n_ok"]) == 1 and int(p4["n_nonfinite"]) == 1 and ag.attrs["n_nonfinite"] == 1
    assert int(p8["n_ok"]) == 1 and int(p8["n_foreign"]) == 1 and ag.attrs["n_foreign"] == 1
    assert json.loads(ag.attrs["nonfinite_json"]) == {"results/runs/linear/adam/P4/seed0.nc": ["c1", "c1_sample"]}
    assert json.loads(ag.attrs["foreign_json"]) == {
        "results/runs/linear/adam/P8/seed0.nc": ["'model.sigma2' = 0.2 (expected 0.1)"]}
    assert float(p4["c1_mean"]) == pytest.approx(good) and np.isnan(float(p4["c1_sem"]))
    log = (wd / "results/logs/aggregate/linear.log").read_text()
    assert "P4/seed0.nc: status ok but non-finite values in c1, c1_sample" in log and "P8/seed0.nc: made with" in log
    summary = subprocess.run([sys.executable, "-m", "copyhead", "summary", "results/aggregate/linear.nc"],
                             cwd=wd, capture_output=True, text=True).stdout
    assert "[left out: 1 nonfinite]" in summary and "[left out: 1 foreign]" in summary
    runs = sorted(str(p.relative_to(wd)) for p in (wd / "results/runs/linear").rglob("*.nc"))
    for how in (["--config", "config.yaml"], []):      # without a config: the recipe's runs disagree
        r = subprocess.run([sys.executable, "-m", "copyhead", "aggregate", "--attention", "linear", "--strict", *how,
                            "--out", "strict.nc", *runs], cwd=wd, capture_output=True, text=True)
        assert r.returncode == 2 and "P8/seed0.nc" in r.stderr and not (wd / "strict.nc").exists(), r.stderr
        if how:
            assert "non-finite values in c1, c1_sample" in r.stderr
    r = _audit(wd, "--all", "--strict")
    assert r.returncode == 1 and "P4/seed0.nc: status ok but non-finite values in c1, c1_sample" in r.stdout
    assert "'model.sigma2' = 0.2 (expected 0.1)" in r.stdout
    r = _audit(wd, "--all", "--fix")
    assert "removed results/runs/linear/adam/P4/seed0.nc (non-finite values in a run marked ok)" in r.stdout
    assert "moved results/runs/linear/adam/P8/seed0.nc to results/quarantine/runs/linear/adam/P8/seed0.nc" in r.stdout
    assert (wd / "results/quarantine/runs/linear/adam/P8/seed0.nc").exists()     # kept, not deleted
    assert "left out of every mean" not in smk(wd).stderr
    assert np.isfinite(float(read_dataset(nan_run)["c1"]))
    assert json.loads(read_dataset(foreign_run).attrs["config_json"])["model"]["sigma2"] == 0.1
    _audit_clean(wd)


def test_captions_render_without_docutils_errors():
    """Every report caption is valid reStructuredText (what `snakemake --report` embeds)."""
    import docutils.core
    captions = sorted((ROOT / "workflow/report").glob("*.rst"))
    assert captions
    for rst in captions:
        html = docutils.core.publish_parts(rst.read_text(), writer_name="html",
                                           settings_overrides={"warning_stream": False})["html_body"]
        assert "System Message" not in html, rst.name


@pytest.mark.long       # three docs workflows and five audits
def test_published_aggregates_remake_the_results_page_and_pass_the_audit(pipeline, tmp_path):
    """A study's aggregates published into docs/data/ (copyhead publish-aggregates) are the committed inputs
    from which `snakemake -s workflow/docs.smk docs_results` makes the results JSON, page and figures, each
    with its record; `copyhead audit --docs docs` passes and names the runs as living outside the checkout;
    editing a committed input fails the audit naming the files made from it. A config other than the
    study's is refused before anything is written."""
    repo = _copy_workflow(tmp_path / "repo")
    for folder in ("src", "config"):                  # what a checkout has (the side workflows read config/)
        shutil.copytree(ROOT / folder, repo / folder)
    for record in ROOT.glob("docs/studies*/studies.json*"):   # the studies tables docs.smk quotes, their records
        (repo / record.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(record, repo / record.relative_to(ROOT))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / ".gitignore").write_text("/studies/\nresults/\n.snakemake/\n/logs/\n")
    run = lambda *a: subprocess.run([sys.executable, "-m", "copyhead", *a], cwd=repo, capture_output=True,
                                    text=True, timeout=600)
    other = yaml.safe_load((pipeline / "config.yaml").read_text())
    other["model"]["sigma2"] = 0.2
    (repo / "other.yaml").write_text(yaml.safe_dump(other))
    r = run("publish-aggregates", str(pipeline), "--config", "other.yaml")
    assert r.returncode == 2 and "not what other.yaml gives them" in r.stderr and not (repo / "docs/data").exists()
    r = run("publish-aggregates", str(pipeline), "--config", "config.yaml")
    assert r.returncode == 0, r.stderr
    manifest = json.loads((repo / "docs/data/converged/.published.json").read_text())
    assert manifest["source"] == str(pipeline) and set(manifest["files"]) == {"aggregate_linear.nc",
                                                                               "aggregate_softmax.nc"}
    smk(repo, "-s", "workflow/docs.smk", "docs_results", "--config", "converged_config=config.yaml")
    for name in ("results.md", "results_appendix.md", "results.json", "results_figures/fig3_linear_order_params.png"):
        assert (repo / "docs" / name).is_file(), name
    r = run("audit", "--docs", "docs")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "inputs outside the checkout (not checked): " + str(pipeline / "results/runs") in r.stdout
    # a figure made by other code whose numbers the current code makes again: the audit passes, naming it, and
    # --accept re-stamps it without a remake (its images keep every byte)
    fig = "docs/results_figures/fig3_linear_order_params"
    side = repo / f"{fig}.provenance.json"
    rec = json.loads(side.read_text())
    made = rec["code_fingerprint"]
    png = (repo / f"{fig}.png").read_bytes()
    os.chmod(side, 0o644)
    side.write_text(json.dumps({**rec, "code_fingerprint": "0123456789abcdef"}))
    r = run("audit", "--docs", "docs")
    assert r.returncode == 0 and f"{fig}.png: made by other figures code" in r.stdout, r.stdout
    assert "every number is the same" in r.stdout
    r = run("audit", "--docs", "docs", "--accept")
    assert r.returncode == 0 and f"re-stamped {fig}.pdf" in r.stdout, r.stdout
    assert json.loads(side.read_text())["code_fingerprint"] == made and (repo / f"{fig}.png").read_bytes() == png
    # one whose committed numbers are not what the current code draws, in a checkout without Snakemake's records
    # of the code (a fresh clone): a plain run keeps it; the audit fails naming it with the --forcerun command
    # that remakes it, and audit --remake runs that command and audits again
    data = json.loads(side.read_text())
    data["figure_data"]["axes"][0]["ylabel"] = "another quantity"
    side.write_text(json.dumps({**data, "code_fingerprint": "0123456789abcdef"}))
    shutil.rmtree(repo / ".snakemake")
    smk(repo, "-s", "workflow/docs.smk", "docs_results", "--config", "converged_config=config.yaml")
    assert json.loads(side.read_text())["code_fingerprint"] == "0123456789abcdef"     # kept by a plain run
    r = run("audit", "--docs", "docs")
    assert r.returncode == 1 and f"{fig}.png: made by other figures code" in r.stdout and "numbers differ" in r.stdout
    remake = r.stdout.strip().splitlines()[-1].split("remade from committed inputs by: ")[1]
    assert remake == f"copyhead audit --docs docs --remake --cores 2 '{fig}.pdf'"   # its png comes with it
    r = run("audit", "--docs", "docs", "--remake", "--cores", "1",
            "--snakemake-args", "--config converged_config=config.yaml")
    assert r.returncode == 0, r.stdout + r.stderr
    # only the figure's own rule may run (a .snakemake/ with other code recorded upstream remakes nothing else)
    assert f"--remake: snakemake -s workflow/docs.smk --cores 1 --config converged_config=config.yaml " \
           f"--allowed-rules docs_fig3_linear_order_params --forcerun {fig}.pdf -- {fig}.pdf" in r.stdout
    assert json.loads(side.read_text())["code_fingerprint"] == made
    r = run("audit", "--docs", "docs", "--remake")
    assert r.returncode == 0 and "nothing to remake" in r.stdout
    agg = repo / "docs/data/converged/aggregate_linear.nc"
    os.chmod(agg, 0o644)
    agg.write_bytes(agg.read_bytes() + b"\0")          # a committed input edited by hand
    r = run("audit", "--docs", "docs")
    assert r.returncode == 1
    assert "docs/results.json: older than its committed input docs/data/converged/aggregate_linear.nc" in r.stdout
    assert "docs/data/converged/aggregate_linear.nc: was changed after it was published" in r.stdout
