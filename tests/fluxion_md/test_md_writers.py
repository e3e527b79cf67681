"""fluxion_md's writers (simulate.run's trajectory, save_checkpoint) create missing folders before
any work and give files the mode a new file gets under the process umask (the reference: what
``open()`` creates)."""

from __future__ import annotations

import os
import stat

import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion_md import energy, simulate, space


def _plain_mode(folder) -> int:
    ref = folder / "plain"
    ref.write_text("")
    return stat.S_IMODE(ref.stat().st_mode)


def _nve_state():
    displacement, shift = space.free()
    init_fn, apply_fn = simulate.nve(energy.soft_sphere_pair(displacement), shift, 1e-3)
    R = jnp.array([[0.0, 0.0], [0.9, 0.0], [0.0, 0.9]])
    return init_fn(fluxion.random.PRNGKey(0), R, kT=0.0), apply_fn


def test_checkpoint_into_a_missing_folder_gets_the_umask_mode(tmp_path):
    state, _ = _nve_state()
    ckpt = tmp_path / "new" / "deeper" / "c.npz"
    old = os.umask(0o027)
    try:
        simulate.save_checkpoint(str(ckpt), state, step=4)
        want = _plain_mode(tmp_path)
    finally:
        os.umask(old)
    assert want == 0o640 and stat.S_IMODE(ckpt.stat().st_mode) == want
    assert not [p for p in ckpt.parent.iterdir() if p.name.startswith(".ckpt-")]


@pytest.mark.slow  # compiles a simulation chunk (~10 s on a busy machine)
def test_trajectory_into_a_missing_folder(tmp_path):
    state, apply_fn = _nve_state()
    traj = tmp_path / "new" / "run" / "t.xyz"
    old = os.umask(0o027)
    try:
        simulate.run(apply_fn, state, 4, chunk_size=2, record_every=2, trajectory=str(traj),
                     progress=False)
        want = _plain_mode(tmp_path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(traj.stat().st_mode) == want
    assert traj.read_text().startswith("3\n")
