"""CLEVR-Robot's ball pushing in MuJoCo (optional extra ``clevr_mujoco``: ``mujoco==3.3.0``).

A re-implementation from the description of Google's clevr_robot_env as KALM uses it (``action_type='perfect'``,
direct observations), with a scene written here, not the original asset files: a flat table, 5 coloured spheres
and a spherical point-mass pusher. Action ``obj * 8 + dir`` teleports the pusher to ``PUSHER_OFFSET`` behind ball
``obj`` (against direction ``dir``, one of CLEVR-Robot's 8 ``PUSH_DIRECTIONS``), then drives it with a constant
motor force along the direction for ``PUSH_STEPS`` physics steps of ``TIMESTEP`` seconds, as the original does.
The pushed ball can hit other balls, which then move too; walls around ``[-bound, bound]^2`` keep the balls on the
table. Then the pusher is moved away and the balls coast to rest (joint damping) for at most ``SETTLE_STEPS``.

The state, actions, goal vector, success rule (``archer.kalm.env.success``), episode starts and the scripted
expert are those of the numpy ``BallPushEnv``, so the rest of the pipeline runs unchanged. The motor force is
calibrated once per environment (bisection) so that a push along a cardinal direction moves a lone ball by
``step_size``, which keeps ``env.step_size`` meaning what it means for the numpy env and lets the expert reuse its
plan. ``motion_noise`` shifts the pusher's start by Gaussian noise (so an off-centre push deflects the ball).

What differs from the original (docs/kalm.md): balls slide in the plane on two slide joints with damping (the
original's are free bodies with table friction, so they may roll); each step starts from rest (the state is
positions only; the original carries velocities from one step to the next and does not wait for the balls to
stop); the arena is the numpy env's square, not the original's walls at x = +-0.6, y = -0.3 / 0.7; ball and pusher
sizes and masses are chosen here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from archer.kalm.env import NUM_ACTIONS, NUM_BALLS, NUM_PUSH_DIRECTIONS, PUSH_DIRECTIONS, STATE_DIM, BallPushEnv
from archer.kalm.errors import MissingExtraError

#: Ball colours (RGBA), in the order of ``archer.kalm.env`` (red, blue, green, purple, cyan).
BALL_RGBA = ("0.9 0.1 0.1 1", "0.1 0.2 0.9 1", "0.1 0.7 0.2 1", "0.6 0.2 0.8 1", "0.1 0.8 0.8 1")
BALL_RADIUS = 0.05
PUSHER_RADIUS = 0.05
#: The pusher starts this far behind the ball's centre, along the push direction vector (CLEVR-Robot: 0.15).
PUSHER_OFFSET = 0.15
TIMESTEP = 0.01
#: Physics steps of the push (CLEVR-Robot: ``frame_skip * 2`` = 40 at 0.01 s).
PUSH_STEPS = 40
#: At most this many steps for the balls to come to rest after the push; stops earlier once all are slower than
#: ``REST_SPEED``.
SETTLE_STEPS = 100
REST_SPEED = 1e-4
#: Where the pusher waits between pushes: far outside the walls (it does not collide with them).
PUSHER_PARKED = 10.0
WALL_THICKNESS = 0.05


def require_mujoco():
    """Import mujoco, or explain how to install the optional extra."""
    try:
        import mujoco
    except ImportError as error:
        raise MissingExtraError(
            "env.name=clevr_mujoco needs the clevr_mujoco extra: pip install -e '.[clevr_mujoco]' "
            "(mujoco==3.3.0, the version metaworld 3.1.1 pins; d3rlpy==2.8.0 for the offline stage)"
        ) from error
    return mujoco


def scene_xml(bound: float) -> str:
    """The MJCF scene: table, 4 walls whose inner faces are ``BALL_RADIUS`` outside ``[-bound, bound]`` (so ball
    centres stay inside it), 5 balls and the pusher, each on slide joints x and y (qpos = its x, y position).

    Collision bits: balls collide with balls, walls and the pusher; the pusher only with balls (it can start
    beyond a wall when the ball lies against it); the table is visual (the balls cannot leave the plane).
    """
    half = bound + BALL_RADIUS + WALL_THICKNESS
    inner = bound + BALL_RADIUS
    z = BALL_RADIUS
    walls = []
    for name, (x, y, sx, sy) in {
        "east": (inner + WALL_THICKNESS, 0.0, WALL_THICKNESS, half),
        "west": (-inner - WALL_THICKNESS, 0.0, WALL_THICKNESS, half),
        "north": (0.0, inner + WALL_THICKNESS, half, WALL_THICKNESS),
        "south": (0.0, -inner - WALL_THICKNESS, half, WALL_THICKNESS),
    }.items():
        walls.append(
            f'<geom name="wall_{name}" type="box" pos="{x} {y} {z}" size="{sx} {sy} {2 * z}" '
            'contype="2" conaffinity="0" rgba="0.5 0.5 0.5 0.3"/>'
        )
    balls = []
    for index, rgba in enumerate(BALL_RGBA):
        balls.append(
            f'<body name="ball{index}" pos="0 0 {z}">'
            f'<joint name="ball{index}_x" type="slide" axis="1 0 0" damping="0.75"/>'
            f'<joint name="ball{index}_y" type="slide" axis="0 1 0" damping="0.75"/>'
            f'<geom name="ball{index}" type="sphere" size="{BALL_RADIUS}" mass="0.05" rgba="{rgba}" '
            'contype="1" conaffinity="3" friction="0"/>'
            "</body>"
        )
    return f"""
<mujoco model="clevr_push">
  <option timestep="{TIMESTEP}" gravity="0 0 -9.81" integrator="implicitfast"/>
  <default>
    <joint armature="0.04" limited="false"/>
    <geom condim="1" margin="0.002"/>
  </default>
  <worldbody>
    <light pos="0 0 3" dir="0 0 -1"/>
    <geom name="table" type="plane" size="{half} {half} 0.1" contype="0" conaffinity="0" rgba="0.8 0.8 0.8 1"/>
    {"".join(walls)}
    {"".join(balls)}
    <body name="pusher" pos="0 0 {z}">
      <joint name="pusher_x" type="slide" axis="1 0 0" damping="0.5"/>
      <joint name="pusher_y" type="slide" axis="0 1 0" damping="0.5"/>
      <geom name="pusher" type="sphere" size="{PUSHER_RADIUS}" mass="0.01" rgba="1 1 1 1"
            contype="1" conaffinity="0" friction="0"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="push_x" joint="pusher_x" ctrllimited="false"/>
    <motor name="push_y" joint="pusher_y" ctrllimited="false"/>
  </actuator>
</mujoco>
"""


def lone_ball_state() -> np.ndarray:
    """Ball 0 at the origin, the others parked apart far outside the walls (for calibration)."""
    state = np.zeros(STATE_DIM)
    for ball in range(1, NUM_BALLS):
        state[2 * ball : 2 * ball + 2] = (PUSHER_PARKED / 2 + ball, -PUSHER_PARKED / 2)
    return state


@dataclass
class ClevrMujocoEnv(BallPushEnv):
    """``BallPushEnv`` (same fields, state, actions, goals, starts and expert) whose pushes are simulated in
    MuJoCo (module docstring). ``force`` is the calibrated motor force; ``push_distances[d]`` the measured
    displacement of a lone ball pushed along direction ``d``."""

    force: float = field(default=0.0, init=False)
    push_distances: np.ndarray = field(default=None, init=False, repr=False)
    _mujoco: object = field(default=None, init=False, repr=False)
    _model: object = field(default=None, init=False, repr=False)
    _data: object = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._mujoco = mujoco = require_mujoco()
        self._model = mujoco.MjModel.from_xml_string(scene_xml(self.bound))
        self._data = mujoco.MjData(self._model)
        self.force = self._calibrate_force()
        lone = lone_ball_state()
        moved = [self.simulate(lone, direction) for direction in range(NUM_PUSH_DIRECTIONS)]
        self.push_distances = np.stack([state[:2] for state in moved])

    # -- physics ----------------------------------------------------------------------------------------------
    def simulate(self, state: np.ndarray, action: int, start_shift=(0.0, 0.0), force: float | None = None):
        """One push from rest: state ``[10]`` (float64, not clipped) -> the balls' positions at rest ``[10]``."""
        mujoco, model, data = self._mujoco, self._model, self._data
        ball, direction = divmod(int(action), NUM_PUSH_DIRECTIONS)
        vector = PUSH_DIRECTIONS[direction]
        mujoco.mj_resetData(model, data)
        data.qpos[:STATE_DIM] = state
        data.qpos[STATE_DIM:] = state[2 * ball : 2 * ball + 2] - PUSHER_OFFSET * vector + np.asarray(start_shift)
        data.ctrl[:] = (self.force if force is None else force) * vector
        for _ in range(PUSH_STEPS):
            mujoco.mj_step(model, data)
        data.ctrl[:] = 0.0
        data.qpos[STATE_DIM:] = PUSHER_PARKED
        data.qvel[STATE_DIM:] = 0.0
        for step in range(SETTLE_STEPS):
            mujoco.mj_step(model, data)
            if step % 10 == 9 and np.abs(data.qvel[:STATE_DIM]).max() < REST_SPEED:
                break
        return data.qpos[:STATE_DIM].copy()

    def _calibrate_force(self) -> float:
        """The motor force at which a lone ball pushed along +x moves ``step_size`` (bisection on a log scale;
        the distance grows with the force)."""
        lone = lone_ball_state()
        low, high = 1e-3, 1e3
        for _ in range(40):
            middle = float(np.sqrt(low * high))
            if self.simulate(lone, 0, force=middle)[0] < self.step_size:
                low = middle
            else:
                high = middle
        return float(np.sqrt(low * high))

    # -- the BallPushEnv interface ----------------------------------------------------------------------------
    def step(self, states: np.ndarray, actions: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Simulate one push per state: ``[B, 10]``, ``[B]`` -> next states ``[B, 10]`` (float32, inside the
        walls). Deterministic for the same states, actions and ``rng`` state."""
        states = np.asarray(states, dtype=np.float64).reshape(-1, STATE_DIM)
        actions = np.asarray(actions, dtype=np.int64).reshape(-1)
        if actions.min(initial=0) < 0 or actions.max(initial=0) >= NUM_ACTIONS:
            raise ValueError(f"actions must be in 0..{NUM_ACTIONS - 1}, got {actions.tolist()}")
        if len(actions) != len(states):
            raise ValueError(f"{len(states)} states but {len(actions)} actions")
        shifts = np.zeros((len(actions), 2))
        if self.motion_noise > 0:
            shifts = rng.normal(0.0, self.motion_noise, size=shifts.shape)
        next_states = np.stack(
            [self.simulate(s, a, shift) for s, a, shift in zip(states, actions, shifts, strict=True)]
        )
        # The walls hold the centres inside [-bound, bound]; soft contacts can overshoot by a hair.
        return np.clip(next_states, -self.bound, self.bound).astype(np.float32)
