"""`snakemake --profile slurm` on a real Slurm (marker `slurm`), and the profile's static contract.

The marked test starts a single-node Slurm on this machine with workflow/scripts/local-slurm.sh (root +
Debian: installs slurm-wlm and munge from the distribution, one CPU-only node advertising one fake GPU),
runs the whole workflow through the executor plugin on a small config in a temporary copy of the
repository, and checks from Slurm's own records (the slurmctld log and the job-completion log) that
every job went through sbatch, how many submissions the DAG took, that training runs were packed
(>= 20 per submission) and that a packed submission asked for one GPU. The daemons it started are
stopped by pid at the end. Run it with

    python -m pytest -m slurm tests/test_slurm.py -v

It skips, saying why, where the cluster cannot be started (not root, not Debian, no apt, no package
mirror). The unmarked tests (profile parsing, comments, no account/partition in the Snakefile) run
everywhere.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "slurm" / "config.yaml"
SCRIPT = ROOT / "workflow" / "scripts" / "local-slurm.sh"
TINY = ROOT / "tests" / "configs" / "tiny.yaml"
STATE = Path(os.environ.get("LOCAL_SLURM_DIR", "/var/tmp/copyhead-slurm"))
PACK = 20  # training jobs per submission the issue asks for


# ---------------------------------------------------------------------------------------------------
# The profile (no cluster needed)

# stand-ins for sinfo (what the profile asks for the node size): one that fails, as where no controller
# answers (the real one then takes ~9 s), and one that reports two nodes
SINFO_FAILS = "#!/bin/sh\nexit 1\n"
SINFO_TWO_NODES = '#!/bin/sh\ncase "$3" in\n  %c) echo 16; echo 32 ;;\n  %m) echo 64000; echo 128000+ ;;\nesac\n'


def _parse_profile(env: dict | None = None, sinfo: str = SINFO_FAILS) -> dict:
    """The profile as Snakemake reads it, with ``env`` set and a stand-in ``sinfo`` first on PATH (the host's
    Slurm, if any, is not asked: the real-Slurm tests below do that)."""
    import tempfile
    from snakemake.profiles import ProfileConfigFileParser

    old = dict(os.environ)
    with tempfile.TemporaryDirectory() as bin_dir:
        (Path(bin_dir) / "sinfo").write_text(sinfo)
        (Path(bin_dir) / "sinfo").chmod(0o755)
        try:
            for k in [k for k in os.environ if k.startswith("COPYHEAD_SLURM_")]:
                del os.environ[k]
            os.environ.update(env or {})
            os.environ["PATH"] = f"{bin_dir}{os.pathsep}{old.get('PATH', '')}"
            with open(PROFILE) as fh:
                return dict(ProfileConfigFileParser().parse(fh))
        finally:
            os.environ.clear()
            os.environ.update(old)


def test_profile_resolves_from_repo_root():
    # Snakemake resolves `--profile slurm` to ./slurm/ (config.yaml) relative to the working directory
    from snakemake.cli import get_profile_dir

    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        found = get_profile_dir("slurm")
    finally:
        os.chdir(cwd)
    assert found is not None and Path(found[0]).resolve() == PROFILE.parent.resolve()


def test_profile_contents_without_environment():
    p = _parse_profile()
    assert p["executor"] == "slurm"
    assert "train=20" in p["group-components"]
    assert "gpu=1" in p["resources"] and "gpu=local" in p["set-resource-scopes"]
    assert "mem_mb=local" in p["set-resource-scopes"]
    assert p["cores"] == "8" and "mem_mb=32000" in p["resources"]       # no sinfo answer: the fallbacks
    assert not any(r.startswith(("slurm_account", "slurm_partition")) for r in p["default-resources"])
    assert "set-resources" not in p  # an empty --set-resources is a command-line error


def test_profile_caps_a_submission_at_the_smallest_node_sinfo_reports():
    p = _parse_profile(sinfo=SINFO_TWO_NODES)
    assert p["cores"] == "16" and "mem_mb=64000" in p["resources"]


def test_profile_takes_account_and_partitions_from_environment():
    p = _parse_profile({"COPYHEAD_SLURM_ACCOUNT": "proj42", "COPYHEAD_SLURM_PARTITION": "cpu",
                        "COPYHEAD_SLURM_GPU_PARTITION": "gpu"})
    assert "slurm_account=proj42" in p["default-resources"]
    assert "slurm_partition=cpu" in p["default-resources"]
    p = _parse_profile({"COPYHEAD_SLURM_CPUS_PER_SUBMISSION": "2", "COPYHEAD_SLURM_MEM_MB_PER_SUBMISSION": "5000"})
    assert p["cores"] == "2" and "mem_mb=5000" in p["resources"]


@pytest.mark.parametrize("env, partition", [({"COPYHEAD_SLURM_PARTITION": "cpu",
                                               "COPYHEAD_SLURM_GPU_PARTITION": "gpu"}, "gpu"),
                                              ({"COPYHEAD_SLURM_PARTITION": "shared"}, "shared")])
def test_training_rules_take_their_partition_from_the_environment(tmp_path, env, partition):
    """The training rules (one per swept recipe) set slurm_partition themselves: the GPU partition, else
    the CPU partition; the other rules keep the profile's default."""
    wd = _copy_repo(tmp_path / "repo", yaml.safe_load(TINY.read_text()))
    full_env = {**{k: v for k, v in os.environ.items() if not k.startswith("COPYHEAD_SLURM_")}, **env}
    r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1"], cwd=wd, env=full_env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    blocks = re.findall(r"rule (\S+):\n(?:.*\n)*?\s*resources: (.*)", r.stdout)
    train = [b for name, b in blocks if name.startswith("train_")]
    assert train and all(f"slurm_partition={partition}" in b for b in train)
    assert not any("slurm_partition" in b for name, b in blocks if not name.startswith("train_"))


def test_profile_gpu_limit_packs_a_group_onto_one_gpu():
    """Snakemake's own group-resource layout (GroupResources.basic_layered, what the executor submits
    for a group job) under the profile's `resources:` limits: 20 independent training runs ask for one
    GPU, the largest memory and the summed runtime. Without the limit they would ask for 20 GPUs."""
    from types import SimpleNamespace

    from snakemake.resources import GroupResources, Resources

    limits = _parse_profile()["resources"]
    jobs = [SimpleNamespace(resources={"gpu": 1, "runtime": 4 + i % 3, "mem_mb": 2600 + 100 * (i % 2),
                                       "_cores": 1, "_nodes": 1}, pipe_group=None) for i in range(PACK)]
    packed = GroupResources.basic_layered([jobs], constraints=Resources.parse(limits, allow_expressions=False),
                                          run_local=False)
    assert packed["gpu"] == 1
    assert packed["runtime"] == sum(j.resources["runtime"] for j in jobs)
    assert packed["mem_mb"] == 2700
    unlimited = GroupResources.basic_layered([jobs], constraints=Resources.parse([], allow_expressions=False),
                                             run_local=False)
    assert unlimited["gpu"] == PACK


def test_profile_caps_lay_a_cpu_only_group_out_to_fit_a_node():
    """A CPU-only group (no GPU to serialise it) under the profile's per-submission caps: 12 members of
    1 CPU and 1100 MB on a node of 2 CPUs and 4000 MB ask for at most 2 CPUs and 4000 MB (in layers), not
    12 CPUs and 13.2 GB (what the packed submission asked for before the caps)."""
    from types import SimpleNamespace

    from snakemake.resources import GroupResources, Resources

    p = _parse_profile({"COPYHEAD_SLURM_CPUS_PER_SUBMISSION": "2", "COPYHEAD_SLURM_MEM_MB_PER_SUBMISSION": "4000"})
    constraints = Resources.parse(p["resources"], allow_expressions=False)
    constraints["_cores"] = int(p["cores"])   # what Snakemake does with --cores (workflow.global_resources)
    jobs = [SimpleNamespace(resources={"gpu": 0, "runtime": 4, "mem_mb": 1100, "_cores": 1, "_nodes": 1},
                            pipe_group=None) for _ in range(12)]
    packed = GroupResources.basic_layered([jobs], constraints=constraints, run_local=False)
    assert packed["_cores"] <= 2 and packed["mem_mb"] <= 4000
    assert packed["runtime"] == 4 * 6          # 6 layers of 2 members


def test_every_profile_entry_is_commented():
    """Each setting has a comment on its line or on the line above (a mapping key whose first child
    line is a comment, or a YTE branch whose body is commented, counts too)."""
    lines = PROFILE.read_text().splitlines()
    for i, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        above = lines[i - 1].strip() if i else ""
        inline = " #" in line
        next_is_comment = i + 1 < len(lines) and lines[i + 1].lstrip().startswith("#")
        yte_branch = line.strip().startswith("?")
        assert above.startswith("#") or inline or next_is_comment or yte_branch, \
            f"slurm/config.yaml line {i + 1} has no comment: {line!r}"


def test_no_account_or_partition_in_the_workflow():
    files = [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]
    for f in files:
        if f.exists():
            text = f.read_text()
            # the training rules read their partition from the profile's environment variables
            # (common.smk: train_partition), never a literal name
            text = re.sub(r'\{"slurm_partition": part\}', "", text)
            for word in ("slurm_account", "slurm_partition", "--account", "--partition"):
                assert word not in text, f"{f.relative_to(ROOT)} names {word}: that belongs in the profile"


def test_paper_config_is_valid():
    import copyhead.config as c

    cfg = c.load(ROOT / "config" / "cluster_L32_dk64.yaml")
    assert len(c.runs(cfg)) >= 10 * PACK
    assert cfg["model"]["d_k"] > 32 and len(cfg["theory"]["scaling"]["L"]) >= 3


# ---------------------------------------------------------------------------------------------------
# The real cluster

def _cannot_start_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root to install slurm-wlm/munge and start slurmctld/slurmd"
    if not Path("/etc/debian_version").exists():
        return "needs Debian (apt packages slurm-wlm and munge)"
    if shutil.which("apt-get") is None:
        return "apt-get not found"
    return None


def _alive(pidfile: Path) -> bool:
    try:
        os.kill(int(pidfile.read_text().strip()), 0)
        return True
    except (OSError, ValueError):
        return False


@pytest.fixture(scope="session")
def cluster():
    reason = _cannot_start_reason()
    if reason:
        pytest.skip(f"local Slurm cannot be started here: {reason}")
    daemons = ("munged", "slurmctld", "slurmd")
    already = {d for d in daemons if _alive(STATE / f"{d}.pid")}
    r = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True, timeout=900)
    if r.returncode == 3:
        pytest.skip(f"local Slurm cannot be started here: {r.stderr.strip()}")
    assert r.returncode == 0, f"local-slurm.sh start failed:\n{r.stdout}\n{r.stderr}"
    started = {d for d in daemons if d not in already}
    yield {"state": STATE, "started": started}
    if started:  # stop what this session started, by pid (the script kills only its pid files)
        subprocess.run(["bash", str(SCRIPT), "stop"], capture_output=True, text=True, timeout=120)
        assert not any(_alive(STATE / f"{d}.pid") for d in started)


def _test_config() -> dict:
    """tests/configs/tiny.yaml with 40 training runs (two packed submissions) and device `auto`, so that
    training jobs request a GPU like on a real cluster (the test node's GPU is fake: the engine falls
    back to the CPU)."""
    cfg = yaml.safe_load(TINY.read_text())
    cfg["numerics"]["device"] = "auto"
    sw = cfg["sweep"]
    Ps = list(range(4, 16))
    sw["linear"]["adam"].update(P=Ps, seeds=[0, 1, 2])
    sw["linear"]["sgld"].update(P=Ps[:8], seeds=[0, 1])
    sw["softmax"]["adam"].update(P=Ps[:10], seeds=[0, 1])
    sw["softmax"]["sgld"].update(P=Ps[:8], seeds=[0, 1])
    sw["softmax"]["sgld_copy"]["seeds"] = [0, 1]
    return cfg


def _train_job_count(cfg: dict) -> int:
    return sum(len(spec["P"]) for recipes in cfg["sweep"].values() for spec in recipes.values())


def _copy_repo(dest: Path, cfg: dict) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Snakefile", dest / "Snakefile")
    for d in ("workflow", "slurm", "envs"):
        if (ROOT / d).is_dir():
            shutil.copytree(ROOT / d, dest / d, dirs_exist_ok=True)
    # the workflow profile (profiles/default), as a user at the repository root gets it, when it exists
    for prof in sorted((ROOT / "profiles").glob("*/*.yaml")):
        (dest / prof.parent.relative_to(ROOT)).mkdir(parents=True, exist_ok=True)
        shutil.copy(prof, dest / prof.relative_to(ROOT))
    (dest / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return dest


def _job_gpus(state: Path) -> dict[str, list[str]]:
    """GPUs Slurm allocated to each job (the cluster's Prolog logs SLURM_JOB_GPUS): JobId -> GPU ids."""
    out = {}
    path = state / "jobgpus.log"
    for line in path.read_text().splitlines() if path.exists() else []:
        f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        out[f["JobId"]] = [] if f.get("JobGPUs", "none") == "none" else f["JobGPUs"].split(",")
    return out


def _jobcomp(state: Path) -> dict[str, dict]:
    """Slurm's job-completion log: JobId -> fields."""
    out = {}
    path = state / "jobcomp.log"
    for line in path.read_text().splitlines() if path.exists() else []:
        f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        out[f["JobId"]] = f
    return out


@pytest.mark.slurm
def test_snakemake_profile_slurm_end_to_end(cluster, tmp_path):
    import copyhead.config as c

    cfg = _test_config()
    runs = c.runs(c.validate(cfg))
    wd = _copy_repo(tmp_path / "repo", cfg)
    # the plain user command: no account (the test cluster has no accounting) and no partition named,
    # so the plugin uses the cluster's default partition (the environment path is tested above)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COPYHEAD_SLURM_")}
    cmd = [sys.executable, "-m", "snakemake", "--profile", "slurm",
           # test-cluster settings (docs/slurm.md): no slurmdbd, so poll with squeue; poll quickly
           "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "2",
           "--seconds-between-status-checks", "3"]
    t0 = time.time()
    r = subprocess.run(cmd, cwd=wd, env=env, capture_output=True, text=True, timeout=900)
    wall = time.time() - t0
    log = r.stdout + r.stderr
    assert r.returncode == 0, f"snakemake --profile slurm failed ({r.returncode}):\n{log[-8000:]}"

    # every output of the DAG exists: run files, aggregates, theory, figures
    for att, opt, P, seed in runs:
        assert (wd / f"results/runs/{att}/{opt}/P{P}/seed{seed}.nc").stat().st_size > 0
    for att in ("linear", "softmax"):
        assert (wd / f"results/aggregate/{att}.nc").exists()
        assert (wd / f"results/theory/{att}.nc").exists()
    figs = sorted((wd / "results/figures").glob("*.pdf"))
    assert figs, "no figure written"
    for f in figs:
        assert f.with_suffix(".png").exists()

    # the jobs went through sbatch: the plugin's run id names every job; Slurm's own logs list them
    m = re.search(r"SLURM run ID: (\S+)", log)
    assert m, "the slurm executor did not start"
    jobname = m.group(1)
    comp = {j: f for j, f in _jobcomp(cluster["state"]).items() if f.get("Name") == jobname}
    ctld = (cluster["state"] / "slurmctld.log").read_text()
    submitted = set(re.findall(r"_slurm_rpc_submit_batch_job: JobId=(\d+)", ctld))
    assert comp, "no job of this run in Slurm's job-completion log"
    assert set(comp) <= submitted, "a job of this run is missing from slurmctld's submissions"
    assert all(f["JobState"] == "COMPLETED" for f in comp.values()), \
        {j: f["JobState"] for j, f in comp.items()}
    # ... and they are exactly the jobs Snakemake says it submitted
    said = set(re.findall(r"has been submitted with SLURM jobid (\d+)", log))
    assert said == set(comp), (sorted(said), sorted(comp))

    # training was packed: per training submission, >= PACK jobs (from the kept SLURM logs), one GPU;
    # each job trains all seeds of one (attention, recipe, P) as one batch of chains
    n_jobs = _train_job_count(cfg)
    logdir = wd / ".snakemake/slurm_logs"
    train_logs = sorted(logdir.glob("group_train*/**/*.log"))
    train_ids = {p.stem for p in train_logs}
    assert train_ids and train_ids <= set(comp), (train_ids, sorted(comp))
    # the job inside a submission runs each member as a `localrule train_<attention>_<recipe>:`
    members = {p.stem: len(re.findall(r"^localrule train_\w+:", p.read_text(), re.M)) for p in train_logs}
    assert sum(members.values()) == n_jobs, members
    assert len(train_ids) == -(-n_jobs // PACK), members
    assert max(members.values()) >= PACK, members
    # GPUs: the node has exactly one, so a packed job asking for 20 would have been rejected by sbatch;
    # Slurm allocated exactly one to every training submission and none to the CPU jobs
    gpus = _job_gpus(cluster["state"])
    for j in train_ids:
        assert len(gpus.get(j, [])) == 1, f"training submission {j} got GPUs {gpus.get(j)}, not one"
    cpu_ids = set(comp) - train_ids
    for j in cpu_ids:
        assert gpus.get(j) == [], f"CPU job {j} got GPUs {gpus.get(j)}"

    # provenance: every figure audits OK, and each run names the SLURM job that trained it
    r = subprocess.run([sys.executable, "-m", "copyhead", "audit", "--all", "--json"], cwd=wd,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    audited = json.loads(r.stdout)
    run_jobs = {str(run["slurm_job_id"]) for rep in audited for run in rep["runs"]}
    assert run_jobs and run_jobs <= train_ids, (sorted(run_jobs), sorted(train_ids))

    report = (f"{len(runs)} training runs in {n_jobs} training jobs -> {len(train_ids)} training submissions "
              f"(members {sorted(members.values(), reverse=True)}); whole DAG: {len(comp)} sbatch "
              f"submissions ({len(cpu_ids)} CPU jobs); wall {wall:.0f}s")
    print(report)
    (tmp_path / "submissions.txt").write_text(report + "\n")


@pytest.mark.slurm
def test_cpu_only_sweep_submissions_fit_the_node(cluster, tmp_path):
    """numerics.device: cpu (no GPU request serialises a packed group): the profile's per-submission caps,
    read from sinfo (the test node: this machine's CPUs), lay each group out in layers that fit the node,
    so every submission is scheduled and completes (before the caps, 12 runs asked for 12 CPUs)."""
    cfg = yaml.safe_load(TINY.read_text())
    cfg["numerics"]["device"] = "cpu"
    cfg["sweep"]["linear"]["adam"]["P"] = list(range(4, 16))       # 20 training jobs: one packed group
    wd = _copy_repo(tmp_path / "repo", cfg)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COPYHEAD_SLURM_")}
    cmd = [sys.executable, "-m", "snakemake", "--profile", "slurm", "--slurm-status-command", "squeue",
           "--slurm-init-seconds-before-status-checks", "2", "--seconds-between-status-checks", "3"]
    r = subprocess.run(cmd, cwd=wd, env=env, capture_output=True, text=True, timeout=900)
    log = r.stdout + r.stderr
    assert r.returncode == 0, f"snakemake --profile slurm failed ({r.returncode}):\n{log[-8000:]}"
    jobname = re.search(r"SLURM run ID: (\S+)", log).group(1)
    comp = {j: f for j, f in _jobcomp(cluster["state"]).items() if f.get("Name") == jobname}
    said = set(re.findall(r"has been submitted with SLURM jobid (\d+)", log))
    assert comp and said == set(comp)
    assert all(f["JobState"] == "COMPLETED" for f in comp.values())
    ncpu = os.cpu_count()
    for j, f in comp.items():
        assert int(f.get("ProcCnt", 1)) <= ncpu, f"submission {j} asked for {f.get('ProcCnt')} CPUs > {ncpu}"
    gpus = _job_gpus(cluster["state"])
    assert all(gpus.get(j) == [] for j in comp), "a CPU-only sweep asked for a GPU"
