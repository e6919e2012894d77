"""The results model, typed: frozen dataclasses for what results.json's ``summary`` (:mod:`.summary`) and the
studies reports' studies.json hold, so that the pages and figures read fields instead of nested dicts.

Each record has ``from_dict(d, where)`` and ``to_dict()``; ``to_dict(from_dict(d)) == d`` for every file the
project writes (the JSON is written from the producers' dicts as before; these types only read it, and their
serialisation is that JSON again, key for key). Reading is strict, with the file and the key in the message:

- a key the record does not know, or a required key that is missing, raises :class:`ResultsFormatError`
  naming ``where`` (the file) and the path of the key, e.g. ``results.json: summary.attentions.linear.
  transitions[0]: missing key 'label'``;
- a field that older files or optional sections may lack is ``Optional`` with a default (:func:`absent`): it
  reads as None where the key is absent and is left out again on writing where it is None;
- a number (:data:`Number`) reads as NaN where the JSON has null (the producers write NaN as null,
  :func:`~.results_tables.jsonable`) and is written back as null; where null means "none" (a verdict that
  cannot be made, a size that does not apply) the field is ``Optional`` and stays None; every other value
  stays as the JSON has it; lists become tuples (the records are frozen) and are written back as lists.

Standard library only: this module sits below the pages (copyhead.results, copyhead.studies) and the
figures, beside the producers (:mod:`.summary`; copyhead.studies.tables writes studies.json).
"""
from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Annotated, Any, Optional, TypeVar

__all__ = ["ResultsFormatError", "Record", "absent", "Summary", "StudiesReport", "read_studies"]

R = TypeVar("R", bound="Record")
_ABSENT = "absent"


class ResultsFormatError(ValueError):
    """A results file that does not have the shape its record expects (the file and the key are named)."""


def absent(default=None):
    """A field whose key may be absent (older files, optional sections): None when absent, and left out of
    ``to_dict`` when None."""
    return field(default=default, metadata={_ABSENT: True})


@lru_cache(maxsize=None)
def _hints(cls) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def _key(where: str, key: str) -> str:
    """The path of a key: 'file: a.b[2].key' (the first key after the file's name, then dotted)."""
    return f"{where}.{key}" if ": " in where else f"{where}: {key}" if where else key


def _read(tp, value, where: str):
    """``value`` (JSON) as type ``tp``: records built, lists as tuples, dicts of records; scalars as they are."""
    origin = typing.get_origin(tp)
    if origin is Annotated:     # a Number: null is NaN
        return math.nan if value is None else value
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)] or [Any]
        return _read(inner, value, where)
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp.from_dict(value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise ResultsFormatError(f"{where}: expected a list, got {type(value).__name__}")
        inner = typing.get_args(tp)[0]
        return tuple(_read(inner, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise ResultsFormatError(f"{where}: expected an object, got {type(value).__name__}")
        inner = typing.get_args(tp)[1]
        return {k: _read(inner, v, _key(where, k)) for k, v in value.items()}
    return value


def _write(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [_write(v) for v in value]
    if isinstance(value, dict):
        return {k: _write(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Record:
    """A JSON object with a fixed set of keys (the dataclass fields; module docstring). A record whose object
    also holds keys that vary (a theory file's transition points) names the dict field that gathers them
    in ``_rest``."""
    _rest: typing.ClassVar[Optional[str]] = None

    @classmethod
    def from_dict(cls: type[R], d: dict, where: str = "") -> R:
        if not isinstance(d, dict):
            raise ResultsFormatError(f"{where or cls.__name__}: expected an object, got {type(d).__name__}")
        fields = dataclasses.fields(cls)
        names = {f.name for f in fields} - {cls._rest}
        unknown = [k for k in d if k not in names]
        if unknown and not cls._rest:
            raise ResultsFormatError(f"{where or cls.__name__}: unknown key(s) {unknown} for {cls.__name__}")
        hints, kwargs = _hints(cls), {}
        for f in fields:
            if f.name == cls._rest:
                kwargs[f.name] = _read(hints[f.name], {k: d[k] for k in unknown}, where)
            elif f.name in d:
                kwargs[f.name] = _read(hints[f.name], d[f.name], _key(where, f.name))
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ResultsFormatError(f"{where or cls.__name__}: missing key '{f.name}' ({cls.__name__})")
        return cls(**kwargs)

    def to_dict(self) -> dict:
        out = {f.name: _write(getattr(self, f.name)) for f in dataclasses.fields(self)
               if f.name != self._rest and not (f.metadata.get(_ABSENT) and getattr(self, f.name) is None)}
        return {**out, **_write(getattr(self, self._rest))} if self._rest else out


Number = Annotated[Optional[float], "null is NaN"]   # a JSON number: NaN where the JSON has null
record = dataclass(frozen=True, kw_only=True)   # the records' fields are named on construction, so a
                                                # required field may follow an optional one


# ------------------------------------------------------------------ results.json: summary (analysis.summary)

@record
class Effect(Record):
    """|Δ| of one method against a curve, or SGLD against HMC (summary.effect_size, summary.sampler_effect);
    without points only tolerance, n and n_not_mixed."""
    tolerance: float
    n: int
    n_not_mixed: int
    n_within_tol: Optional[int] = absent()
    provisional: Optional[bool] = absent()       # not in SGLD against HMC
    max_abs_delta: Number = absent()
    rms_delta: Number = absent()                 # not in SGLD against HMC
    worst_P: Number = absent()
    worst_param: Optional[str] = absent()
    worst_delta: Number = absent()
    worst_rel: Number = absent()
    worst_experiment: Number = absent()
    worst_theory: Number = absent()


@record
class AgreementVerdict(Record):
    """summary.agreement_verdict: the effect size decides, significance beside it."""
    rule: str
    effect: Effect
    value: Number
    rms_z: Number
    n_within_2: Optional[int]
    n_away: Optional[int]
    outcome: str


@record
class OtherRecipe(Record):
    """A method's further prior-started recipe beside the scored one."""
    recipe: str
    recipe_config: dict[str, Any]
    verdict: AgreementVerdict


@record
class Agreement(Record):
    """One method's natural curve over the points away from the transitions (summary.agreement_rows)."""
    method: str
    recipe: str
    curve: Optional[str]
    curve_label: str
    recipe_config: dict[str, Any]
    verdict: AgreementVerdict
    others: tuple[OtherRecipe, ...]
    n_away: Optional[int]
    n_within_2: Optional[int]
    rms_z: Number
    chi2_per_dof: Number
    p_value: Number
    worst_recipe: Optional[str]
    worst_P: Number
    worst_param: Optional[str]
    worst_z: Number
    n_all: Optional[int]
    rms_z_all: Number
    rms_z_block_lo: Number
    rms_z_block_hi: Number
    block_n_distinct: Optional[int]
    n_grid_limited: Optional[int]


@record
class TheoryValue(Record):
    """A theory value with its curve's label: the closed form's transition, a theory point of another kind
    (the thermodynamic P*: shown, never compared); lo/hi: the grid bracket of a jump read on the swept P."""
    label: str
    value: Number
    lo: Number = absent()
    hi: Number = absent()


@record
class Theory(TheoryValue):
    """The theory value a method's transition is judged against (summary.natural_theory)."""
    source: str
    kind: str
    why: str


@record
class CellVerdict(Record):
    rule: str
    value: Number
    outcome: str


@record
class Cell(Record):
    """One method's transition: estimate, 95 % CI, its theory value and verdict (summary._method_cell)."""
    recipe: str
    estimate: Number
    ci_lo: Number
    ci_hi: Number
    resolved: Optional[bool]
    bracket: Optional[tuple[Number, ...]]
    rise_share: Number
    n_valid: Optional[int]
    n_boot: Optional[int]
    note: str
    theory: Optional[Theory]
    verdict: CellVerdict


@record
class Paper(Record):
    """The paper's number, quoted at its σ², and on ours (lo_ours, hi_ours)."""
    what: str
    quoted: str
    sigma2_paper: float
    lo: float
    hi: float
    lo_ours: float
    hi_ours: float


@record
class Transition(Record):
    """One transition kind of one attention type (summary.transition_rows)."""
    kind: str
    label: str
    estimator: str
    closed_form: TheoryValue
    theory_points: tuple[TheoryValue, ...]
    paper: Optional[Paper]
    adam: Optional[Cell]
    sgld: Optional[Cell]
    hmc: Optional[Cell]

    def cell(self, method: str) -> Cell | None:
        """The cell of a method ("adam", "sgld", "hmc")."""
        return getattr(self, method)


@record
class Convergence(Record):
    """R̂ flags of one sampling method's rows and prior/copy pairs (summary.convergence_summary)."""
    rhat_max: float
    n_rows: int
    n_flag: int
    n_within_flag: int
    n_pairs: int
    n_paired_flag: int
    largest_paired: Number
    smallest_paired_ess: Number
    paired_points: tuple[str, ...]
    target_ess: Number = absent()
    target_rhat: Number = absent()
    n_pairs_on_target: Optional[int] = absent()
    below_target_points: Optional[tuple[str, ...]] = absent()
    largest_rhat: Number
    largest_within: Number
    smallest_ess: Number
    within_points: tuple[str, ...]


@record
class Evidence(Record):
    """A number on why SGLD and its natural curve differ (summary.evidence): one of three kinds by ``what``."""
    what: str
    n: Optional[int] = absent()
    of: Optional[int] = absent()
    rhat_max: Number = absent()
    same_mean: Number = absent()
    exact_mean: Number = absent()
    source: Optional[str] = absent()
    mean: Number = absent()
    saddle: Number = absent()


@record
class SamplerSummary(Record):
    """SGLD against HMC on the same training sets, one SGLD recipe (the tables' sampler_summary + effect)."""
    attention: str
    recipe: str
    reference: str
    n: int
    n_within_2: int
    rms_z: Number
    worst_P: Number
    worst_diff: Number
    worst_param: str
    worst_z: Number
    ess_sgld: Number
    ess_hmc: Number
    effect: Optional[Effect] = absent()     # the summary's (analysis.summary.reference_posterior), not the tables'


@record
class Reference(Record):
    """The HMC reference posterior (summary.reference_posterior)."""
    convergence: Convergence
    sgld: tuple[SamplerSummary, ...]


@record
class Nonfinite(Record):
    """A run that ended with a non-finite result (analysis.experiments.nonfinite_runs)."""
    recipe: str
    P: float
    seed: int
    variables: tuple[str, ...]


@record
class AttentionSummary(Record):
    sigma2: Number
    transitions: tuple[Transition, ...]
    agreement: tuple[Agreement, ...]
    convergence: Convergence
    evidence: tuple[Evidence, ...]
    reference: Optional[Reference]
    nonfinite: tuple[Nonfinite, ...]

    def transition(self, kind: str) -> Transition | None:
        """The row of one transition kind ("onset", "crossover", "jump", ...), if measured."""
        return next((r for r in self.transitions if r.kind == kind), None)


@record
class Scaling(Record):
    """The closed-form P* against L under the paper's forms (summary.scaling_summary)."""
    L: tuple[Number, ...]
    P_star: tuple[Number, ...]
    spread: dict[str, float]
    best: str
    rule: str
    d_k: Optional[int]


@record
class Summary(Record):
    """results.json's ``summary`` (analysis.summary.build_summary). ``scaling``: absent without softmax
    attention; None (written as absent) where the theory has no scaling scan."""
    paper_sigma2: float
    tolerance: float
    attentions: dict[str, AttentionSummary]
    scaling: Optional[Scaling] = absent()



# ------------------------------------------------- results.json: the tables (analysis.results_tables)

@record
class Recipe(Record):
    """A recipe of the sweep: its method, start and copy-started twin (analysis.experiments.recipes)."""
    method: str
    init: str
    twin: Optional[str]


@record
class SweepEntry(Record):
    """What an aggregate holds of one recipe (analysis.experiments.sweep_table)."""
    P: tuple[float, ...]
    seeds: tuple[int, ...]
    n_ok: int
    n_diverged: int
    n_nonfinite: Optional[int] = absent()


@record
class ConvergenceRow(Record):
    """R̂ and ESS of one (recipe, P, parameter) (analysis.convergence.convergence_table); rows "a+b": the
    prior- and copy-started chains of one training set, with their paired R̂ and ESS."""
    attention: str
    recipe: str
    starts: str
    P: float
    param: str
    name: str
    n_chains: int
    n_draws: int
    mean: Number
    rhat: Number
    rhat_flag: bool
    rhat_within_max: Number
    ess_bulk: Number
    ess_sum: Number
    ess_chain_min: Number
    err_mcse: Number
    err_spread: Number
    error: Number
    error_basis: str
    rhat_basis: Optional[str] = absent()
    rhat_plot: Number = absent()
    n_pairs: Optional[int] = absent()
    rhat_paired_max: Number = absent()
    ess_paired_min: Number = absent()


@record
class AgreementPoint(Record):
    """One (recipe, P, parameter) of a sampler against one theory curve: a row of results.json's agreement
    table (analysis.agreement.agreement_table; the keys after ``z`` are those of the current code, older
    results lack them), also a study's points in studies.json (with the Gaussian-prior closed form added,
    studies.tables.load_study)."""
    attention: str
    recipe: str
    method: str
    P: float
    param: str
    name: str
    curve: str
    away: bool
    experiment: Number
    error: Number
    theory: Number
    theory_error: Number
    z: Number
    curve_label: Optional[str] = absent()
    init: Optional[str] = absent()
    kind: Optional[str] = absent()
    source: Optional[str] = absent()
    natural: Optional[bool] = absent()
    error_basis: Optional[str] = absent()
    theory_grid_error: Number = absent()
    z_offset: Number = absent()
    z_chains_rms: Number = absent()
    n: Optional[int] = absent()
    seeds: Optional[tuple[int, ...]] = absent()
    seed_values: Optional[tuple[Number, ...]] = absent()
    mixed: Optional[bool] = absent()
    mix_rhat: Number = absent()
    mix_ess: Number = absent()


@record
class AgreementSummaryRow(Record):
    """One recipe against one theory curve over the points away from the transitions
    (analysis.agreement.agreement_summaries)."""
    attention: str
    recipe: str
    method: str
    kind: str
    level: str
    curve: str
    curve_label: str
    source: str
    natural: bool
    n_all: int
    n_away: int
    n_within_2: int
    n_no_error: int
    n_grid_limited: int
    rms_z: Number
    rms_z_all: Number
    rms_z_block_lo: Number
    rms_z_block_hi: Number
    block_n_distinct: int
    chi2: Number
    chi2_per_dof: Number
    dof: int
    p_value: Number
    worst_recipe: str
    worst_P: Number
    worst_param: str
    worst_z: Number
    n_mixed: Optional[int] = absent()
    n_not_mixed: Optional[int] = absent()
    n_within_2_mixed: Optional[int] = absent()
    rms_z_mixed: Number = absent()
    max_abs_delta: Number = absent()     # the effect size over the away points (older results lack it)


@record
class TransitionTheoryValue(Record):
    """A theory value beside a measured transition and whether the data's interval contains it."""
    curve: str
    value: Number
    contains: Optional[bool]
    lo: Number = absent()
    hi: Number = absent()
    rise_share: Number = absent()
    compared: Optional[bool] = absent()


@record
class SpinodalWindow(Record):
    curve: str
    lo: Number
    hi: Number
    overlaps: Optional[bool]


@record
class TransitionRow(Record):
    """One recipe's transition with its bootstrap CI (analysis.transition_table.transition_table)."""
    attention: str
    transition: str
    recipe: str
    method: str
    estimate: Number
    ci_lo: Number
    ci_hi: Number
    level: float
    n_boot: int
    n_valid: int
    resolved: bool
    note: str
    theory: tuple[TransitionTheoryValue, ...]
    bracket: Optional[tuple[Number, ...]] = absent()
    rise_share: Number = absent()
    interpolation_error: Number = absent()
    disagree_P: Optional[tuple[Number, ...]] = absent()
    windows: Optional[tuple[SpinodalWindow, ...]] = absent()


@record
class SamplerRow(Record):
    """SGLD against HMC at one (P, parameter) on the same training sets (analysis.samplers.sampler_table)."""
    attention: str
    recipe: str
    reference: str
    init: str
    P: float
    param: str
    name: str
    n_seeds: int
    sgld: Number
    hmc: Number
    diff: Number
    error: Number
    z: Number
    z_seed_max: Number
    ess_sgld: Number
    ess_hmc: Number
    draws_sgld: int
    draws_hmc: int


@record
class Mark(Record):
    name: str
    P: Number


@record
class AdamPosition(Record):
    """Where an Adam transition lies among the theory's marks (analysis.adam)."""
    recipe: str
    transition: str
    source: str
    estimate: Number
    ci_lo: Number
    ci_hi: Number
    estimate_is: Optional[str]
    ci_lo_is: Optional[str]
    ci_hi_is: Optional[str]
    marks: tuple[Mark, ...]


@record
class AdamVsMinimiser(Record):
    recipe: str
    param: str
    name: str
    curve: str
    n: int
    n_below: int
    median_difference: Number
    median_relative_difference: Number


@record
class LandscapeMinima(Record):
    """The minima of one action landscape S(β) at one P."""
    source: str
    P: float
    n_minima: int
    beta_uniform: Number
    beta_copy: Number
    dS_copy_minus_uniform: Number


@record
class RecipePair(Record):
    """Two Adam recipes at one (P, parameter): their seed means and the z of the difference."""
    recipes: tuple[str, ...]
    P: float
    param: str
    name: str
    mean_a: Number
    sem_a: Number
    n_a: int
    mean_b: Number
    sem_b: Number
    n_b: int
    difference: Number
    z: Number


@record
class AdamTables(Record):
    """Adam, a MAP estimate, against the theory (analysis.adam.adam_table)."""
    position: tuple[AdamPosition, ...]
    landscape: tuple[LandscapeMinima, ...]
    map_vs_prior_warmup: tuple[RecipePair, ...]
    vs_minimiser: Optional[tuple[AdamVsMinimiser, ...]] = absent()


@record
class AggregateInfo(Record):
    """The aggregate's provenance (its attributes)."""
    n_runs: Optional[int]
    n_diverged: Optional[int]
    n_absent: Optional[int]
    code_version: Optional[str]
    config_hash: Optional[str]
    run_code_fingerprints: Optional[str]
    mixed_code: Optional[int]
    run_config_hashes: tuple[str, ...]


@record
class TheoryInfo(Record):
    """The theory file: its transition points (``points``: P_star, P_crossover_exact_gaussian, ... as the file
    has them) and its config, prior and provenance."""
    _rest = "points"
    config: dict[str, Any]
    prior: str
    exact_n_datasets: int
    config_hash: str
    code_version: str
    points: dict[str, Number] = field(default_factory=dict)


@record
class AttentionTables(Record):
    """Every table of one attention type (analysis.results_tables.build_tables)."""
    recipes: dict[str, Recipe]
    sweep: dict[str, SweepEntry]
    convergence: tuple[ConvergenceRow, ...]
    agreement: tuple[AgreementPoint, ...]
    agreement_summary: tuple[AgreementSummaryRow, ...]
    transitions: tuple[TransitionRow, ...]
    adam: AdamTables
    theory: TheoryInfo
    scaling: dict[str, tuple[Number, ...]]
    samplers: tuple[SamplerRow, ...]
    sampler_summary: tuple[SamplerSummary, ...]
    aggregate: AggregateInfo
    same_dataset: bool
    nonfinite: tuple[Nonfinite, ...]
    same_dataset_config_hash: Optional[str] = absent()


@record
class Settings(Record):
    n_boot: int
    away_factor: float
    rhat_max: float
    bootstrap_seed: int
    level: Optional[float] = absent()


@record
class InputFile(Record):
    path: str
    sha256: str
    config_hash: str
    kind: str


@record
class ConfigRecord(Record):
    """The validated config the sweep ran with: its hash and canonical JSON."""
    hash: str
    json: str


@record
class ResultsTables(Record):
    """results.json (copyhead.results.write_results): the tables, the summary, the inputs and the config."""
    settings: Settings
    attentions: dict[str, AttentionTables]
    summary: Optional[Summary] = absent()
    inputs: Optional[dict[str, InputFile]] = absent()
    config_name: Optional[str] = absent()
    config: Optional[ConfigRecord] = absent()


# ------------------------------------------------------------ studies.json (copyhead.studies.tables.build)

@record
class StudyTransition(Record):
    """One attention type's transition of a study, with the theory's values of it per curve/prior
    (large_deviation, gaussian, exact, same_dataset, closed_mean); softmax: the jump's bracket and the
    theory's brackets (studies.tables._transition)."""
    name: str
    recipe: str
    estimate: Number
    ci_lo: Number
    ci_hi: Number
    resolved: bool
    note: str
    theory: dict[str, Number]
    bracket: Optional[tuple[Number, ...]] = absent()
    theory_brackets: Optional[dict[str, tuple[Number, ...]]] = absent()


@record
class PointStatus(Record):
    """What one sampled (P, param) of a study shows (analysis.convergence.point_status): mixed, metastable
    (each chain mixed, a training set's two starts disagree) or not mixed."""
    P: float
    param: str
    status: str
    paired: bool
    rhat_within: Number
    ess_chain: Number
    rhat_paired: Number


@record
class StudyAttention(Record):
    """One attention type of a study (studies.tables.load_study)."""
    grid: tuple[float, ...]
    rows: tuple[AgreementPoint, ...]
    transition: StudyTransition
    P_ref: Number
    rhat_max: Number
    n_rhat_flag: int
    n_conv: int
    n_within_flag: int
    rhat_within_max: Number
    ess_min: Number
    ess_chain_min: Number
    points: Optional[tuple[PointStatus, ...]] = absent()   # older tables lack it


@record
class StudyCost(Record):
    train_jobs: int
    train_model_s: Number
    gpu_model_s: Number


@record
class StudySeconds(Record):
    train: Number
    other: Number


@record
class StudySize(Record):
    """A study's name and size."""
    name: str
    L: int
    V: int
    d_k: int
    sigma2: float


@record
class Study(StudySize):
    """One study: its sizes, sampler and per attention type its points and transition."""
    path: str
    eta: Number
    attentions: dict[str, StudyAttention]
    code_version: Optional[str] = absent()
    method: Optional[str] = absent()
    recipe: Optional[str] = absent()
    seconds: Optional[StudySeconds] = absent()
    cost: Optional[StudyCost] = absent()
    sampler: Optional[dict[str, Number]] = absent()   # the stage recipe's steps, step size, burn-in, thin
    current: Optional[bool] = absent()                 # sampled with the recipe the spec gives it now
    carried: Optional[str] = absent()                  # the commit of the report its tables were carried from


@record
class Ratio(Record):
    """Linear crossover / softmax jump of one study: the experiment's with its interval (lo, hi) and the
    theory's per prior/curve (analysis.scaling_claims.scaling_rows)."""
    experiment: Number
    lo: Number
    hi: Number
    large_deviation: Number = None
    gaussian: Number = None
    same_dataset: Optional[tuple[Number, ...]] = None
    closed_mean: Optional[tuple[Number, ...]] = None


@record
class ChainMixing(Record):
    rhat_within_max: Number
    ess_chain_min: Number


@record
class ScalingRow(StudySize):
    """One study on a path along L (analysis.scaling_claims.scaling_rows)."""
    method: str
    sqrt_LV: Number
    ln2L: Number
    mixing: dict[str, ChainMixing]
    ratio: Optional[Ratio] = absent()
    linear: Optional[StudyTransition] = absent()
    softmax: Optional[StudyTransition] = absent()

    def transition(self, attention: str) -> StudyTransition | None:
        return getattr(self, attention)


@record
class TheoryLine(Record):
    """The closed form's transitions along L of one (attention, prior)."""
    L: tuple[int, ...]
    P_crossover: tuple[Number, ...]
    P_star: tuple[Number, ...]


@record
class TheoryLines(Record):
    """The closed form along a studies' path (studies.tables.theory_lines): the path (V, a fixed d_k or
    d_k = dk_per_L·L, its label) and per "attention|prior" its line; all absent for a path without rows."""
    V: Optional[int] = absent()
    d_k: Optional[int] = None
    dk_per_L: Optional[float] = None
    label: Optional[str] = absent()
    lines: dict[str, TheoryLine] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict, where: str = "") -> TheoryLines:
        if not isinstance(d, dict):
            raise ResultsFormatError(f"{where}: expected an object, got {type(d).__name__}")
        lines = {k: TheoryLine.from_dict(v, _key(where, k)) for k, v in d.items() if "|" in k}
        if not d:
            return cls()
        rest = super().from_dict({k: v for k, v in d.items() if "|" not in k}, where)
        return dataclasses.replace(rest, lines=lines)

    def to_dict(self) -> dict:
        if self.label is None and not self.lines:
            return {}
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "lines"}
        return {**out, **{k: v.to_dict() for k, v in self.lines.items()}}

    def line(self, attention: str, prior: str) -> TheoryLine | None:
        return self.lines.get(f"{attention}|{prior}")


@record
class StudyPath(Record):
    """The studies along L on one path (the group scaling, or a fixed_dk* group with its figure)."""
    group: str
    rows: tuple[ScalingRow, ...]
    theory_lines: TheoryLines
    figure: Optional[str] = absent()


@record
class ZSummary(Record):
    n: int
    n_within_2: int
    rms_z: Number
    max_delta: Number = absent()          # the effect size: largest |experiment − theory| (older tables lack it)
    n_within_tol: Optional[int] = absent()  # points with |Δ| ≤ the agreement tolerance


@record
class Fit(Record):
    """y = a + b/x weighted fit (analysis.fits.fit_inverse_dk)."""
    a: Number
    a_err: Number
    b: Number
    b_err: Number
    chi2_dof: Number
    n: int


@record
class GapPoint(Record):
    x: int
    d_k: int
    L: int
    P: float
    experiment: Number
    theory: Number
    gap: Number
    error: Number
    z: Number
    study: Optional[str] = absent()     # the study's name (older tables lack it)


@record
class Gap(Record):
    attention: str
    recipe: str
    ratio: float
    param: str
    name: str
    points: tuple[GapPoint, ...]
    fit: Fit
    closes: Optional[bool]


@record
class RatioPoint(Record):
    x: int
    d_k: int
    L: int
    experiment: Number
    ci_lo: Number
    ci_hi: Number
    theory: Number
    ratio: Number
    error: Number
    study: Optional[str] = absent()     # the study's name (older tables lack it)


@record
class FiniteSizeTransition(Record):
    attention: str
    transition: str
    prior: str
    points: tuple[RatioPoint, ...]
    fit: Fit
    tends_to_theory: Optional[bool]


@record
class FiniteSizeAgreement(Record):
    """RMS z of one study's sampler against each theory curve (analysis.finite_size.CURVES)."""
    name: str
    x: int
    d_k: int
    L: int
    d_k_over_L: float
    attention: str
    same_mean: ZSummary
    closed_mean: ZSummary
    closed_mean_gaussian: ZSummary


@record
class FiniteSize(Record):
    """Studies that differ in one size ``by`` (d_k, or L at fixed d_k/L; analysis.finite_size.finite_size)."""
    by: str
    values: tuple[int, ...]
    L: Optional[int]
    d_k_over_L: Optional[float]
    gaps: tuple[Gap, ...]
    transitions: tuple[FiniteSizeTransition, ...]
    agreement: tuple[FiniteSizeAgreement, ...]


@record
class TwinPoint(Record):
    attention: str
    recipe: str
    P: float
    P_over_sigma2: float
    param: str
    name: str
    value: Number
    error: Number
    value_ref: Number
    error_ref: Number
    theory: Number
    theory_ref: Number
    z: Number
    z_vs_theory: Number


@record
class TwinTransition(Record):
    name: str
    value: Number
    ci: tuple[Number, ...]
    value_ref: Number
    ci_ref: tuple[Number, ...]
    theory: Number
    theory_ref: Number
    overlap: Optional[bool]


@record
class Twin(Record):
    """A study against its twin at equal P/σ² (analysis.twins.compare_twins)."""
    study: str
    ref: str
    sigma2: float
    sigma2_ref: float
    differs: str
    eta: Number
    eta_ref: Number
    rows: tuple[TwinPoint, ...]
    transitions: dict[str, TwinTransition]
    n: int
    n_within_2: int
    rms_z: Number
    n_within_2_theory: int
    rms_z_theory: Number


@record
class Sigma2Collapse(Record):
    transitions_collapse: bool
    rule: str


@record
class StudiesReport(Record):
    """studies.json: every table of the studies report (copyhead.studies.tables.build); the optional parts
    exist where the spec's groups have enough studies."""
    studies: tuple[Study, ...]
    finite_size: Optional[FiniteSize] = absent()
    finite_L: Optional[FiniteSize] = absent()
    scaling: Optional[StudyPath] = absent()
    fixed_dk: Optional[tuple[StudyPath, ...]] = absent()
    twins: Optional[tuple[Twin, ...]] = absent()
    sigma2_collapse: Optional[Sigma2Collapse] = absent()
    paper_scale: Optional[tuple[str, ...]] = absent()

    def paths(self) -> list[StudyPath]:
        """The paths along L the studies ran: the scaling group's, then each fixed_dk group's."""
        return ([self.scaling] if self.scaling else []) + list(self.fixed_dk or ())


def read_studies(path) -> StudiesReport:
    """A studies report's JSON file (docs/studies*/studies.json) as a :class:`StudiesReport`."""
    import json
    from pathlib import Path
    return StudiesReport.from_dict(json.loads(Path(path).read_text()), str(path))
