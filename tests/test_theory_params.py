"""TheoryParams: the theory's typed parameters, built once from config.theory_config (issue 9, item 1)."""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from copyhead import config as c
from copyhead.config import TheoryParams, theory_params


ROOT = Path(__file__).resolve().parents[1]


def cfg():
    """The default config's theory subset, with unsorted P lists and a small d_k."""
    tc = c.theory_config(c.load(ROOT / "config.yaml"))
    tc["model"]["d_k"] = 8
    tc["theory"]["landscape_P"]["softmax"] = [50.0, 10.0]
    tc["theory"]["exact"]["P"] = [16, 4, 8]
    tc["theory"]["scaling"] = {"L": [6, 4]}
    return tc


def test_numbers_are_normalised():
    a = theory_params(cfg())
    b = cfg()
    b["model"].update(d_k=8.0, g_Q=int(b["model"]["g_Q"]))
    b["theory"].update(P_min=int(b["theory"]["P_min"]))
    b["theory"]["exact"]["P"] = [4, 8, 16.0]
    b = theory_params(b)
    assert a == b and hash(a) == hash(b)
    assert type(a.action.d_k) is int and type(a.action.g_Q) is float and type(a.P_min) is float
    assert a.exact.P == (4, 8, 16) and a.landscape_P.of("softmax") == (10.0, 50.0)
    assert a.scaling.L == (6, 4) and a.scaling.V == () and a.scaling.d_k == ()   # order kept; defaults
    assert a.exact.enabled and not dataclasses.replace(a.exact, P=()).enabled
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.action.L = 3


def test_replace_normalises_and_default_config_builds():
    p = theory_params(cfg()).action
    q = p.replace(L=7.0, g_O=2)
    assert (q.L, q.g_O) == (7, 2.0) and type(q.L) is int and p.L == c.load(ROOT / "config.yaml")["task"]["L"]
    with pytest.raises(c.ConfigError, match="d_k"):
        p.replace(d_k=8.5)
    assert isinstance(theory_params(cfg()), TheoryParams) and p.prior in ("large_deviation", "gaussian")


def test_invalid_theory_config_names_the_keys():
    bad = cfg()
    bad["model"]["d_k"] = "x"
    del bad["theory"]["grid_n"]
    bad["theory"]["exact"]["extra"] = 1
    with pytest.raises(c.ConfigError) as e:
        theory_params(bad)
    msg = str(e.value)
    assert "'model.d_k'" in msg and "'theory.grid_n'" in msg and "'theory.exact.extra'" in msg


def test_old_dict_params_still_accepted_by_exported_actions():
    """copyhead.theory exports action_linear/action_softmax with the same signature: a dict still works."""
    from copyhead.theory import action_linear, action_softmax
    p = theory_params(cfg()).action
    d = dataclasses.asdict(p)
    c1, cG = [0.1, 0.2], [0.3, -0.1]
    assert np.array_equal(action_linear(c1, cG, 40, d), action_linear(c1, cG, 40, p))
    assert np.array_equal(action_softmax([0.5, 2.0], 40, d), action_softmax([0.5, 2.0], 40, p))
