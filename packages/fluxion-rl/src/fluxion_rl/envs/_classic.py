"""Gymnasium's classic-control tasks as pure functions: CartPole, Pendulum, MountainCar, Acrobot.

The constants and update rules follow gymnasium's ``classic_control`` implementations step for step
(tested against them); arithmetic is float32 (gymnasium keeps some states in float64).
"""

from __future__ import annotations

import math
from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jrandom
from fluxion_rl.envs._core import Environment

Array = Any

__all__ = ["CartPole", "Pendulum", "MountainCar", "Acrobot"]


class CartPole(Environment):
    """Balance a pole on a cart (``CartPole-v1``): 2 actions (push left / right), reward 1 per step.

    Observation ``[x, x_dot, theta, theta_dot]``; terminates when ``|x| > 2.4`` or
    ``|theta| > 12 degrees``; truncated after 500 steps.

    Example (the numbers gymnasium's ``CartPole-v1`` gives from the same state):
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_rl.envs import CartPole
        >>> env = CartPole()
        >>> state, obs = env.reset(fluxion.random.key(0))
        >>> obs.shape, env.num_actions, int(state.t)
        ((4,), 2, 0)
        >>> state = state._replace(physics=jnp.array([0.0, 0.0, 0.1, 0.0]))
        >>> state, obs, reward, terminated, truncated = env.step(state, 1)  # push right
        >>> [round(float(v), 6) for v in obs], float(reward), bool(terminated), int(state.t)
        ([0.0, 0.193556, 0.1, -0.259533], 1.0, False, 1)
        >>> state = state._replace(physics=jnp.array([0.0, 0.0, 0.25, 0.0]))  # past 12 degrees
        >>> bool(env.step(state, 0)[3])
        True
    """

    name = "CartPole"
    num_actions = 2
    observation_shape = (4,)
    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_threshold_radians = 12 * 2 * math.pi / 360
    x_threshold = 2.4

    def __init__(self, max_episode_steps: int | None = 500):
        self.max_episode_steps = max_episode_steps

    def _reset_physics(self, key: Array) -> Array:
        return jrandom.uniform(key, (4,), minval=-0.05, maxval=0.05)

    def _step_physics(self, physics: Array, action: Array) -> tuple[Array, Array, Array]:
        x, x_dot, theta, theta_dot = physics[0], physics[1], physics[2], physics[3]
        total_mass = self.masspole + self.masscart
        polemass_length = self.masspole * self.length
        force = jnp.where(action == 1, self.force_mag, -self.force_mag)
        cos, sin = jnp.cos(theta), jnp.sin(theta)
        temp = (force + polemass_length * jnp.square(theta_dot) * sin) / total_mass
        thetaacc = (self.gravity * sin - cos * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * jnp.square(cos) / total_mass))
        xacc = temp - polemass_length * thetaacc * cos / total_mass
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        new = jnp.stack([x, x_dot, theta, theta_dot])
        terminated = ((x < -self.x_threshold) | (x > self.x_threshold)
                      | (theta < -self.theta_threshold_radians) | (theta > self.theta_threshold_radians))
        return new, jnp.ones((), jnp.float32), terminated

    def _observe(self, physics: Array) -> Array:
        return physics


def _angle_normalize(x: Array) -> Array:
    return ((x + math.pi) % (2 * math.pi)) - math.pi


class Pendulum(Environment):
    """Swing up a pendulum (``Pendulum-v1``): a torque in ``[-2, 2]`` (shape (1,)), never terminates.

    Physics ``[theta, theta_dot]``; observation ``[cos theta, sin theta, theta_dot]``; reward
    ``-(theta^2 + 0.1 theta_dot^2 + 0.001 u^2)``; truncated after 200 steps.

    Example (the numbers gymnasium's ``Pendulum-v1`` gives from the same state):
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_rl.envs import Pendulum
        >>> env = Pendulum()
        >>> state, obs = env.reset(fluxion.random.key(0))
        >>> state = state._replace(physics=jnp.array([0.5, 0.0]))
        >>> state, obs, reward, terminated, truncated = env.step(state, jnp.array([1.0]))
        >>> [round(float(v), 6) for v in obs], round(float(reward), 6), bool(terminated)
        ([0.865084, 0.501627, 0.509569], -0.251, False)
    """

    name = "Pendulum"
    action_low, action_high, action_shape = -2.0, 2.0, (1,)
    observation_shape = (3,)
    max_speed, dt, m, l = 8.0, 0.05, 1.0, 1.0  # noqa: E741 - gymnasium's names

    def __init__(self, max_episode_steps: int | None = 200, g: float = 10.0):
        self.max_episode_steps = max_episode_steps
        self.g = g

    def _reset_physics(self, key: Array) -> Array:
        high = jnp.array([math.pi, 1.0], jnp.float32)
        return jrandom.uniform(key, (2,), minval=-high, maxval=high)

    def _step_physics(self, physics: Array, action: Array) -> tuple[Array, Array, Array]:
        th, thdot = physics[0], physics[1]
        u = action[0]
        costs = _angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * u**2
        newthdot = thdot + (3 * self.g / (2 * self.l) * jnp.sin(th) + 3.0 / (self.m * self.l**2) * u) * self.dt
        newthdot = jnp.clip(newthdot, -self.max_speed, self.max_speed)
        newth = th + newthdot * self.dt
        return jnp.stack([newth, newthdot]), -costs, jnp.zeros((), bool)

    def _observe(self, physics: Array) -> Array:
        return jnp.stack([jnp.cos(physics[0]), jnp.sin(physics[0]), physics[1]])


class MountainCar(Environment):
    """Drive an under-powered car up a hill (``MountainCar-v0``): 3 actions, reward -1 per step.

    Observation ``[position, velocity]``; terminates at ``position >= 0.5``; truncated after 200 steps.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_rl.envs import MountainCar
        >>> env = MountainCar()
        >>> state, obs = env.reset(fluxion.random.key(0))
        >>> state = state._replace(physics=jnp.array([-0.5, 0.0]))
        >>> state, obs, reward, terminated, truncated = env.step(state, jnp.array(2))  # push right
        >>> [round(float(v), 6) for v in obs], float(reward), bool(terminated)
        ([-0.499177, 0.000823], -1.0, False)
    """

    name = "MountainCar"
    num_actions = 3
    observation_shape = (2,)
    min_position, max_position, max_speed, goal_position = -1.2, 0.6, 0.07, 0.5
    force, gravity = 0.001, 0.0025

    def __init__(self, max_episode_steps: int | None = 200, goal_velocity: float = 0.0):
        self.max_episode_steps = max_episode_steps
        self.goal_velocity = goal_velocity

    def _reset_physics(self, key: Array) -> Array:
        return jnp.stack([jrandom.uniform(key, (), minval=-0.6, maxval=-0.4), jnp.zeros((), jnp.float32)])

    def _step_physics(self, physics: Array, action: Array) -> tuple[Array, Array, Array]:
        position, velocity = physics[0], physics[1]
        velocity = velocity + (action - 1) * self.force + jnp.cos(3 * position) * -self.gravity
        velocity = jnp.clip(velocity, -self.max_speed, self.max_speed)
        position = jnp.clip(position + velocity, self.min_position, self.max_position)
        velocity = jnp.where((position == self.min_position) & (velocity < 0), 0.0, velocity)
        terminated = (position >= self.goal_position) & (velocity >= self.goal_velocity)
        return jnp.stack([position, velocity]), -jnp.ones((), jnp.float32), terminated

    def _observe(self, physics: Array) -> Array:
        return physics


def _wrap(x: Array, low: float, high: float) -> Array:
    # gymnasium subtracts/adds the period in a loop; one remainder is the same for the speeds bounded here.
    diff = high - low
    return jnp.where(x > high, x - diff * jnp.ceil((x - high) / diff),
                     jnp.where(x < low, x + diff * jnp.ceil((low - x) / diff), x))


class Acrobot(Environment):
    """Swing a two-link robot's tip above a line (``Acrobot-v1``): 3 torques, reward -1 per step.

    Physics ``[theta1, theta2, dtheta1, dtheta2]``, integrated with one RK4 step of 0.2 s ("book"
    dynamics); observation ``[cos t1, sin t1, cos t2, sin t2, dt1, dt2]``; truncated after 500 steps.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_rl.envs import Acrobot
        >>> env = Acrobot()
        >>> state, obs = env.reset(fluxion.random.key(0))
        >>> state = state._replace(physics=jnp.zeros(4))  # hanging still
        >>> state, obs, reward, terminated, truncated = env.step(state, jnp.array(2))  # torque +1
        >>> [round(float(v), 4) for v in obs], float(reward), bool(terminated)
        ([0.9999, -0.0133, 0.9994, 0.0343, -0.1287, 0.3345], -1.0, False)
    """

    name = "Acrobot"
    num_actions = 3
    observation_shape = (6,)
    dt = 0.2
    LINK_LENGTH_1 = LINK_MASS_1 = LINK_MASS_2 = LINK_MOI = 1.0
    LINK_COM_POS_1 = LINK_COM_POS_2 = 0.5
    MAX_VEL_1, MAX_VEL_2 = 4 * math.pi, 9 * math.pi

    def __init__(self, max_episode_steps: int | None = 500):
        self.max_episode_steps = max_episode_steps

    def _reset_physics(self, key: Array) -> Array:
        return jrandom.uniform(key, (4,), minval=-0.1, maxval=0.1)

    def _dsdt(self, s: Array, a: Array) -> Array:
        m1, m2, l1 = self.LINK_MASS_1, self.LINK_MASS_2, self.LINK_LENGTH_1
        lc1, lc2, i1, i2, g = self.LINK_COM_POS_1, self.LINK_COM_POS_2, self.LINK_MOI, self.LINK_MOI, 9.8
        theta1, theta2, dtheta1, dtheta2 = s[0], s[1], s[2], s[3]
        d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * jnp.cos(theta2)) + i1 + i2
        d2 = m2 * (lc2**2 + l1 * lc2 * jnp.cos(theta2)) + i2
        phi2 = m2 * lc2 * g * jnp.cos(theta1 + theta2 - math.pi / 2.0)
        phi1 = (-m2 * l1 * lc2 * dtheta2**2 * jnp.sin(theta2)
                - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * jnp.sin(theta2)
                + (m1 * lc1 + m2 * l1) * g * jnp.cos(theta1 - math.pi / 2) + phi2)
        ddtheta2 = ((a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * jnp.sin(theta2) - phi2)
                    / (m2 * lc2**2 + i2 - d2**2 / d1))
        ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
        return jnp.stack([dtheta1, dtheta2, ddtheta1, ddtheta2])

    def _step_physics(self, physics: Array, action: Array) -> tuple[Array, Array, Array]:
        torque = action.astype(jnp.float32) - 1.0
        h, h2 = self.dt, self.dt / 2.0
        k1 = self._dsdt(physics, torque)
        k2 = self._dsdt(physics + h2 * k1, torque)
        k3 = self._dsdt(physics + h2 * k2, torque)
        k4 = self._dsdt(physics + h * k3, torque)
        ns = physics + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        ns = jnp.stack([_wrap(ns[0], -math.pi, math.pi), _wrap(ns[1], -math.pi, math.pi),
                        jnp.clip(ns[2], -self.MAX_VEL_1, self.MAX_VEL_1),
                        jnp.clip(ns[3], -self.MAX_VEL_2, self.MAX_VEL_2)])
        terminated = -jnp.cos(ns[0]) - jnp.cos(ns[1] + ns[0]) > 1.0
        return ns, jnp.where(terminated, 0.0, -1.0), terminated

    def _observe(self, s: Array) -> Array:
        return jnp.stack([jnp.cos(s[0]), jnp.sin(s[0]), jnp.cos(s[1]), jnp.sin(s[1]), s[2], s[3]])
