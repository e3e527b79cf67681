"""``fluxion.debug``: printing, callbacks and breakpoints that work inside ``jit``, ``vmap``,
``grad`` and control flow, as JAX's ``jax.debug``.

- :func:`print` formats like ``str.format`` when the values are known (at run time, on the
  host), with JAX's rules: the format string must use every argument, and a string without
  placeholders is followed by the arguments separated by spaces.
- :func:`callback` calls any Python function with the runtime values.
- :func:`breakpoint` stops on the host with the values of the traced variables in scope and
  reads debugger commands (``p expr``, ``pp expr``, ``l``, ``w``, ``u``, ``d``, ``c``, ``q``).

Under ``vmap`` each batch member is printed/called separately; under ``grad`` the primal values
are seen (once, in the forward pass). ``ordered=True`` keeps the calls in program order.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> @fluxion.jit
    ... def f(x):
    ...     fluxion.debug.print("x = {x}", x=x)
    ...     return x + 1
    >>> f(jnp.arange(3)).tolist()
    x = [0 1 2]
    [1, 2, 3]
"""

from __future__ import annotations

import builtins
import cmd
import copy
import inspect
import linecache
import logging
import pprint
import string
import sys
import traceback
from typing import IO, Any, Callable

import numpy as np

import fluxion.sharding as _sharding
from fluxion.callback import _is_array_leaf, debug_callback_bind
from fluxion.core.errors import _is_internal, user_frame

# The sharding inspectors are module attributes loaded lazily by __getattr__ below.
__all__ = ["print", "callback", "breakpoint", "log", "DebuggerFrame",  # noqa: F822
           "inspect_array_sharding", "visualize_array_sharding", "visualize_sharding"]  # noqa: F822

_SHARDING_NAMES = ("inspect_array_sharding", "visualize_array_sharding", "visualize_sharding")


def __getattr__(name: str) -> Any:
    # JAX keeps its sharding inspectors in jax.debug; ours live in fluxion.sharding (loaded lazily).
    if name in _SHARDING_NAMES:
        return getattr(_sharding, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _FormatChecker(string.Formatter):
    """Checks a format string against its arguments without formatting anything."""

    def format_field(self, value: Any, format_spec: str) -> str:
        return ""

    def check_unused_args(self, used_args: Any, args: Any, kwargs: Any) -> None:
        unused = [a for i, a in enumerate(args) if i not in used_args]
        unused_kw = [k for k in kwargs if k not in used_args]
        if unused:
            raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused}")
        if unused_kw:
            raise ValueError(
                f"Unused keyword arguments to `jax.debug.print`: {unused_kw}. You may be passing "
                'an f-string (i.e, `f"{x}"`) into `jax.debug.print` and instead should pass in a '
                "regular string.")


_CHECKER = _FormatChecker()


def _has_placeholders(fmt: str) -> bool:
    if not fmt:
        return False
    _, field, *_ = next(iter(string.Formatter().parse(fmt)))
    return field is not None


class _Printer:
    """The host side of one ``debug.print``: formats with the print options of trace time;
    ``record`` (for :func:`log`) sends the message to the ``fluxion.debug`` logger instead."""

    __slots__ = ("fmt", "options", "placeholders", "record", "__weakref__")

    def __init__(self, fmt: str, options: dict, placeholders: bool,
                 record: logging.LogRecord | None = None) -> None:
        self.fmt, self.options, self.placeholders = fmt, options, placeholders
        self.record = record

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if self.placeholders:
            with np.printoptions(**self.options):
                msg = self.fmt.format(*args, **kwargs)
        else:
            msg = " ".join((self.fmt, *(str(a) for a in args)))
        if self.record is not None:
            rec = copy.copy(self.record)
            rec.msg = msg
            _LOGGER.handle(rec)
        else:
            sys.stdout.write(msg + "\n")


_LOGGER = logging.getLogger("fluxion.debug")


def _log_record() -> logging.LogRecord:
    f = user_frame()
    file, line = ("(unknown file)", 0) if f is None else (f.f_code.co_filename, f.f_lineno)
    return _LOGGER.makeRecord(_LOGGER.name, logging.INFO, file, line, "", (), None)


def callback(callback: Callable[..., None] | None = None, *args: Any, ordered: bool = False,
             partitioned: bool = False, **kwargs: Any) -> Callable[..., None] | None:
    """Call ``callback(*args, **kwargs)`` on the host with the runtime values (returns None).

    Also usable in two steps: ``debug.callback(ordered=True)(fn, *args)``. Arguments that are
    not arrays (strings, None, objects) are passed through unchanged.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> seen = []
        >>> fluxion.jit(lambda x: fluxion.debug.callback(seen.append, x))(jnp.ones(2))
        >>> [s.tolist() for s in seen]
        [[1.0, 1.0]]
    """
    def _call(cb: Callable[..., None], *c_args: Any, **c_kwargs: Any) -> None:
        if not callable(cb):
            raise TypeError("first argument to jax.debug.callback must be callable, but got an "
                            f"object of type {type(cb)}")
        debug_callback_bind(cb, c_args, c_kwargs, ordered=ordered, partitioned=partitioned)

    if callback is not None:
        _call(callback, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError("debug_callback received unexpected arguments in the two-call form: "
                        f"args={args} kwargs={kwargs}")
    return _call


def print(fmt: str | None = None, *args: Any, ordered: bool = False, partitioned: bool = False,
          skip_format_check: bool = False, **kwargs: Any) -> Callable[..., None] | None:
    """Print ``fmt.format(*args, **kwargs)`` with the runtime values, also inside ``jit``.

    Write ``debug.print("x = {x}", x=x)``, not an f-string (formatting happens later, on the
    host). Also usable in two steps: ``debug.print(ordered=True)("x = {}", x)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fluxion.vmap(lambda x: fluxion.debug.print("{}", x))(jnp.arange(2))
        0
        1
    """
    def _print(f: str, *p_args: Any, **p_kwargs: Any) -> None:
        if not skip_format_check:
            _CHECKER.format(f, *p_args, **p_kwargs)
        printer = _Printer(f, dict(np.get_printoptions()), _has_placeholders(f))
        debug_callback_bind(printer, p_args, p_kwargs, ordered=ordered, partitioned=partitioned)

    if fmt is not None:
        _print(fmt, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError("debug_print received unexpected arguments in the two-call form: "
                        f"args={args} kwargs={kwargs}")
    return _print


def log(fmt: str | None = None, *args: Any, ordered: bool = False, partitioned: bool = False,
        skip_format_check: bool = False, **kwargs: Any) -> Callable[..., None] | None:
    """Like :func:`print`, but the message goes to the ``fluxion.debug`` logger at INFO level,
    with the user's file and line as the record's location (JAX's ``jax.debug.log``).

    Example:
        >>> import fluxion
        >>> fluxion.debug.log("step {}", 3)
    """
    def _log(f: str, *p_args: Any, **p_kwargs: Any) -> None:
        if not skip_format_check:
            _CHECKER.format(f, *p_args, **p_kwargs)
        printer = _Printer(f, dict(np.get_printoptions()), _has_placeholders(f), _log_record())
        debug_callback_bind(printer, p_args, p_kwargs, ordered=ordered, partitioned=partitioned)

    if fmt is not None:
        _log(fmt, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError("debug_log received unexpected arguments in the two-call form: "
                        f"args={args} kwargs={kwargs}")
    return _log


# ------------------------------------------------------------------ breakpoint

class DebuggerFrame:
    """One Python frame seen by the debugger: where it is, its source, and its variables
    (traced ones replaced by their runtime values)."""

    def __init__(self, filename: str, lineno: int, function: str, locals_: dict,
                 globals_: dict) -> None:
        self.filename, self.lineno, self.function = filename, lineno, function
        self.locals, self.globals = locals_, globals_
        self.source = linecache.getlines(filename)

    def __repr__(self) -> str:
        return f"DebuggerFrame({self.filename}:{self.lineno} in {self.function})"


class _Debugger(cmd.Cmd):
    """A small text debugger over captured frames (JAX's ``jdb`` commands)."""

    prompt = "(fdb) "

    def __init__(self, frames: list[DebuggerFrame], stdin: IO[str] | None,
                 stdout: IO[str] | None) -> None:
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is None
        self.frames = frames
        self.index = 0
        self.intro = "Entering fdb:"

    def _out(self, text: str) -> None:
        builtins.print(text, file=self.stdout)

    def evaluate(self, expr: str) -> Any:
        f = self.frames[self.index]
        env = dict(f.globals)
        env.update(f.locals)
        return eval(expr, {}, env)

    def _error(self) -> None:
        self._out("*** " + traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip())

    def default(self, line: str) -> None:
        self.do_p(line)

    def emptyline(self) -> bool:
        return False

    def do_p(self, arg: str) -> None:
        """p expression: evaluate and print its repr."""
        try:
            self._out(repr(self.evaluate(arg)))
        except Exception:
            self._error()

    def do_pp(self, arg: str) -> None:
        """pp expression: evaluate and pretty-print."""
        try:
            self._out(pprint.pformat(self.evaluate(arg)))
        except Exception:
            self._error()

    def context(self, n: int = 2) -> None:
        f = self.frames[self.index]
        lines = [f"> {f.filename}({f.lineno})"]
        for i in range(max(1, f.lineno - n), min(len(f.source), f.lineno + n) + 1):
            mark = "->  " if i == f.lineno else "    "
            lines.append(mark + f.source[i - 1].rstrip("\n"))
        self._out("\n".join(lines))

    def do_list(self, arg: str) -> None:
        """l(ist): the source around the current line."""
        self.context(5)

    do_l = do_list

    def do_up(self, arg: str) -> None:
        """u(p): one frame up (towards the caller)."""
        if self.index == len(self.frames) - 1:
            self._out("At topmost frame.")
        else:
            self.index += 1
        self.context()

    do_u = do_up

    def do_down(self, arg: str) -> None:
        """d(own): one frame down."""
        if self.index == 0:
            self._out("At bottommost frame.")
        else:
            self.index -= 1
        self.context()

    do_d = do_down

    def do_where(self, arg: str) -> None:
        """w(here): the captured stack, most recent frame last."""
        lines = ["Traceback:"]
        for f in self.frames[::-1]:
            lines.append(f'  File "{f.filename}", line {f.lineno}, in {f.function}')
            if 0 < f.lineno <= len(f.source):
                lines.append("    " + f.source[f.lineno - 1].strip())
        self._out("\n".join(lines))

    do_w = do_bt = do_where

    def do_continue(self, arg: str) -> bool:
        """c(ontinue): leave the debugger and go on."""
        return True

    do_c = do_cont = do_continue

    def do_quit(self, arg: str) -> bool:
        """q(uit): stop the program (raises SystemExit)."""
        raise SystemExit(0)

    do_q = do_exit = do_quit

    def do_EOF(self, arg: str) -> bool:  # noqa: N802 - cmd's name for end of input
        return True


def _is_value(v: Any) -> bool:
    return _is_array_leaf(v) and not isinstance(v, (bool, int, float, complex, str))


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,
               num_frames: int | None = None, ordered: bool = False, token: Any = None,
               **kwargs: Any) -> Any:
    """Stop here on the host and read debugger commands, with every array variable of the
    enclosing frames holding its runtime value (also inside ``jit``/``vmap``).

    Commands: ``p expr``/``pp expr`` (or just ``expr``), ``l`` (list), ``w`` (where),
    ``u``/``d`` (frame up/down), ``c`` (continue), ``q`` (quit). ``stdin=``/``stdout=`` keyword
    arguments redirect the session (tests, notebooks). Returns ``token`` unchanged.

    Example:
        >>> import io, fluxion, fluxion.numpy as jnp
        >>> def f(x):
        ...     y = x * 2
        ...     fluxion.debug.breakpoint(stdin=io.StringIO("p y\\nc\\n"), stdout=io.StringIO())
        ...     return y
        >>> fluxion.jit(f)(jnp.ones(2)).tolist()
        [2.0, 2.0]
    """
    stdin, stdout = kwargs.pop("stdin", None), kwargs.pop("stdout", None)
    if kwargs:
        raise TypeError(f"debug.breakpoint: unexpected keyword arguments {sorted(kwargs)}")
    frames_info = []
    f = inspect.currentframe().f_back
    while f is not None:
        if not (filter_frames and _is_internal(f.f_code.co_filename)):
            frames_info.append(f)
        f = f.f_back
        if num_frames is not None and len(frames_info) >= num_frames:
            break
    # Array locals are passed to the callback (runtime values); other locals are kept as they
    # were when the breakpoint was traced.
    layout, values = [], []
    for fr in frames_info:
        dyn, static = {}, {}
        for k, v in fr.f_locals.items():
            if _is_value(v):
                dyn[k] = len(values)
                values.append(v)
            else:
                static[k] = v
        layout.append((fr.f_code.co_filename, fr.f_lineno, fr.f_code.co_name, dyn, static,
                       fr.f_globals))
    del frames_info, f

    def _enter(*vals: Any) -> None:
        frames = []
        for filename, lineno, fname, dyn, static, glb in layout:
            loc = dict(static)
            loc.update({k: vals[i] for k, i in dyn.items()})
            frames.append(DebuggerFrame(filename, lineno, fname, loc, glb))
        dbg = _Debugger(frames, stdin, stdout)
        dbg.intro = None
        dbg._out("Entering fdb:")
        dbg.context()
        dbg.cmdloop()

    _enter.__qualname__ = "debug.breakpoint"
    debug_callback_bind(_enter, tuple(values), {}, ordered=ordered, partitioned=False)
    return token
