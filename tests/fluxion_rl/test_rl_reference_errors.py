"""Errors as rlax raises them: the same exception types (chex's AssertionError included) and, where
rlax writes its own message, rlax's words first; rlax's private module layout resolves."""

import importlib

import numpy as np
import pytest

import fluxion.numpy as jnp
import fluxion_rl

rlax = pytest.importorskip("rlax")


def _message(fn, *args, **kwargs) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        fn(*args, **kwargs)
    return info.type, str(info.value)


CASES = [
    ("lhs_broadcast", (np.ones(3), np.ones((4, 2))), {}),
    ("tree_map_zipped", (lambda *a: a[0], [{"a": 1}, {"b": 1}]), {}),
    ("tree_select", (True, {"a": 1.0}, {"b": 1.0}), {}),
    ("extract_subsequences", (np.zeros((5, 2)), np.zeros((2, 1), np.int32), 1), {"max_valid_start_idx": 24}),
]


@pytest.mark.parametrize("name,args,kwargs", CASES, ids=[c[0] for c in CASES])
def test_reference_words_first(name, args, kwargs) -> None:
    ref_type, ref_msg = _message(getattr(rlax, name), *args, **kwargs)
    our_type, our_msg = _message(getattr(fluxion_rl, name), *args, **kwargs)
    assert issubclass(our_type, ref_type)
    assert our_msg.startswith(ref_msg), (our_msg, ref_msg)
    assert name in our_msg  # and ours names the function


def test_rank_errors_are_also_assertion_errors_as_chex() -> None:
    # rlax (chex) raises AssertionError for a wrong rank; we raise a ValueError that is one too
    with pytest.raises(AssertionError):
        rlax.td_lambda(np.ones((2, 2)), np.ones(2), np.ones(2), np.ones(2), 0.5)
    with pytest.raises(AssertionError, match=r"td_lambda: argument `v_tm1` must have rank 1"):
        fluxion_rl.td_lambda(jnp.ones((2, 2)), jnp.ones(2), jnp.ones(2), jnp.ones(2), 0.5)
    with pytest.raises(ValueError):
        fluxion_rl.knn_query(jnp.array([]), jnp.array([]), num_neighbors=2)
    with pytest.raises(AssertionError):
        fluxion_rl.knn_query(jnp.array([]), jnp.array([]), num_neighbors=2)


def test_private_layout_names() -> None:
    """Every name rlax's tests take from ``rlax._src.<module>`` resolves in ``fluxion_rl._src``."""
    used = {"mpo_ops": ["get_top_k_weights", "kl_constraint_loss", "LagrangePenalty"],
            "multistep": ["importance_corrected_td_errors", "lambda_returns"],
            "transforms": ["hyperbolic_sin", "hyperbolic_arcsin"],
            "exploration": ["IntrinsicRewardState"],
            "value_learning": ["q_learning", "double_q_learning"]}
    for mod, names in used.items():
        ours = importlib.import_module(f"fluxion_rl._src.{mod}")
        ref = importlib.import_module(f"rlax._src.{mod}")
        for n in names:
            assert hasattr(ref, n) and hasattr(ours, n), (mod, n)
    from rlax._src.mpo_ops import get_top_k_weights as ref_top_k

    from fluxion_rl._src.mpo_ops import get_top_k_weights
    adv = np.array([1.0, 4.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(np.asarray(get_top_k_weights(0.5, jnp.ones(4), jnp.asarray(adv))),
                                  np.asarray(ref_top_k(0.5, np.ones(4, np.float32), adv)))
    with pytest.raises(ValueError):
        get_top_k_weights(0.01, jnp.ones((3, 2)), jnp.ones((3, 2)))
