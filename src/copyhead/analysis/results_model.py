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
- numbers stay as the JSON has them (None where the producer wrote NaN, :func:`~.results_tables.jsonable`);
  lists become tuples (the records are frozen) and are written back as lists.

Standard library only: this module sits below the pages (copyhead.results, copyhead.studies) and the
figures, beside the producers (:mod:`.summary`; copyhead.studies.tables writes studies.json).
"""
from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Optional, TypeVar

__all__ = ["ResultsFormatError", "Record", "absent", "Summary"]

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
    return typing.get_type_hints(cls)


def _read(tp, value, where: str):
    """``value`` (JSON) as type ``tp``: records built, lists as tuples, dicts of records; scalars as they are."""
    origin = typing.get_origin(tp)
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
        return {k: _read(inner, v, f"{where}.{k}") for k, v in value.items()}
    return value


def _write(value):
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [_write(v) for v in value]
    if isinstance(value, dict):
        return {k: _write(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Record:
    """A JSON object with a fixed set of keys (the dataclass fields; module docstring)."""

    @classmethod
    def from_dict(cls: type[R], d: dict, where: str = "") -> R:
        if not isinstance(d, dict):
            raise ResultsFormatError(f"{where or cls.__name__}: expected an object, got {type(d).__name__}")
        fields = dataclasses.fields(cls)
        names = {f.name for f in fields}
        unknown = [k for k in d if k not in names]
        if unknown:
            raise ResultsFormatError(f"{where or cls.__name__}: unknown key(s) {unknown} for {cls.__name__}")
        hints, kwargs = _hints(cls), {}
        for f in fields:
            if f.name in d:
                kwargs[f.name] = _read(hints[f.name], d[f.name], f"{where}.{f.name}" if where else f.name)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ResultsFormatError(f"{where or cls.__name__}: missing key '{f.name}' ({cls.__name__})")
        return cls(**kwargs)

    def to_dict(self) -> dict:
        return {f.name: _write(getattr(self, f.name)) for f in dataclasses.fields(self)
                if not (f.metadata.get(_ABSENT) and getattr(self, f.name) is None)}


Number = Optional[float]    # a JSON number, None where the producer had NaN
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
    effect: Effect


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
