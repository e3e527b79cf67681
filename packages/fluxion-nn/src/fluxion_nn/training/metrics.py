"""Metrics: ``Average``, ``Accuracy``, ``Welford``, ``MultiMetric`` (as ``flax.nnx.metrics``);
their state is ``MetricState`` Variables, so they work inside ``nnx.jit``."""

from __future__ import annotations

import dataclasses
from typing import Any

import fluxion.numpy as jnp
import fluxion.tree_util as tree_util

from ..graph import split
from ..pytreelib import Pytree
from ..variablelib import Variable

__all__ = ["MetricState", "Metric", "Average", "Accuracy", "Welford", "Statistics", "MultiMetric"]


class MetricState(Variable):
    """Variable type of metric accumulators.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> avg = nnx.metrics.Average()
        >>> sorted(nnx.state(avg, nnx.metrics.MetricState).keys())
        ['count', 'total']
    """


class Metric(Pytree):
    """Base class: ``update(**kwargs)``, ``compute()``, ``reset()``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Total(nnx.metrics.Metric):
        ...     def __init__(self):
        ...         self.total = nnx.metrics.MetricState(jnp.array(0.0))
        ...     def reset(self):
        ...         self.total.value = jnp.array(0.0)
        ...     def update(self, *, values):
        ...         self.total.value = self.total.value + values.sum()
        ...     def compute(self):
        ...         return self.total.value
        >>> t = Total()
        >>> t.update(values=jnp.array([1.0, 2.0]))
        >>> float(t.compute())
        3.0
    """

    def reset(self) -> None:
        raise NotImplementedError

    def update(self, **kwargs: Any) -> None:
        raise NotImplementedError

    def compute(self) -> Any:
        raise NotImplementedError

    def split(self, *filters: Any) -> tuple:
        """``nnx.split(self, *filters)``: the metric's GraphDef and State(s).

        Example:
            >>> import fluxion_nn as nnx
            >>> graphdef, state = nnx.metrics.Average().split()
            >>> sorted(state.keys())
            ['count', 'total']
        """

        return split(self, *filters)


class Average(Metric):
    """Running mean of the values passed as ``argname`` (default ``values``).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> avg = nnx.metrics.Average("loss")
        >>> avg.update(loss=jnp.array([1.0, 3.0]))
        >>> avg.update(loss=jnp.array(5.0))
        >>> float(avg.compute())
        3.0
    """

    def __init__(self, argname: str = "values"):
        self.argname = argname
        self.total = MetricState(jnp.array(0, dtype=jnp.float32))
        self.count = MetricState(jnp.array(0, dtype=jnp.int32))

    def reset(self) -> None:
        """Zero the accumulators."""
        self.total.value = jnp.array(0, dtype=jnp.float32)
        self.count.value = jnp.array(0, dtype=jnp.int32)

    def update(self, mask: Any = None, **kwargs: Any) -> None:
        """Add ``kwargs[argname]`` (a number or an array) to the running mean; ``mask``
        (broadcastable to the values) leaves out the values where it is 0/False."""
        if self.argname not in kwargs:
            raise TypeError(f"Expected keyword argument '{self.argname}' (Average.update)")
        values = kwargs[self.argname]
        if mask is not None and isinstance(values, (int, float)):
            raise ValueError(f"If mask is provided, {self.argname} should be a jax array "
                             f"(Average.update got a Python {type(values).__name__})")
        if isinstance(values, (int, float)):
            self.total.value = self.total.value + values
            self.count.value = self.count.value + 1
            return
        values = jnp.asarray(values)
        if mask is None:
            self.total.value = self.total.value + values.sum()
            self.count.value = self.count.value + values.size
        else:
            mask = jnp.asarray(mask)
            self.total.value = self.total.value + (values * mask.astype(values.dtype)).sum()
            self.count.value = self.count.value + mask.sum().astype(self.count.value.dtype)

    def compute(self) -> Any:
        """The mean so far."""
        return self.total.value / self.count.value


@dataclasses.dataclass(frozen=True)
class Statistics:
    """What ``Welford.compute()`` returns (a pytree of three arrays).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> w = nnx.metrics.Welford()
        >>> w.update(values=jnp.array([1.0, 2.0, 3.0, 4.0]))
        >>> stats = w.compute()
        >>> float(stats.mean), float(stats.standard_deviation), float(stats.standard_error_of_mean)
        (2.5, 1.118034, 0.559017)
    """

    mean: Any
    standard_error_of_mean: Any
    standard_deviation: Any


tree_util.register_dataclass(Statistics, ["mean", "standard_error_of_mean", "standard_deviation"], [])


class Welford(Metric):
    """Running mean, standard error and variance (Welford's algorithm).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> w = nnx.metrics.Welford()
        >>> w.update(values=jnp.array([1.0, 2.0, 3.0, 4.0]))
        >>> float(w.compute().mean)
        2.5
    """

    def __init__(self, argname: str = "values"):
        self.argname = argname
        self.count = MetricState(jnp.array(0, dtype=jnp.int32))
        self.mean = MetricState(jnp.array(0, dtype=jnp.float32))
        self.m2 = MetricState(jnp.array(0, dtype=jnp.float32))

    def reset(self) -> None:
        """Zero the accumulators."""
        self.count.value = jnp.array(0, dtype=jnp.int32)
        self.mean.value = jnp.array(0, dtype=jnp.float32)
        self.m2.value = jnp.array(0, dtype=jnp.float32)

    def update(self, **kwargs: Any) -> None:
        """Merge the statistics of ``kwargs[argname]`` (a number or an array)."""
        if self.argname not in kwargs:
            raise TypeError(f"Expected keyword argument '{self.argname}' (Welford.update)")
        values = kwargs[self.argname]
        scalar = isinstance(values, (int, float))
        if not scalar:
            values = jnp.asarray(values)
        n_b = 1 if scalar else values.size
        mean_b = values if scalar else values.mean()
        m2_b = 0.0 if scalar else values.var() * n_b
        n_a = self.count.value
        n = n_a + n_b
        delta = mean_b - self.mean.value
        self.count.value = n
        self.mean.value = self.mean.value + delta * n_b / n
        self.m2.value = self.m2.value + m2_b + delta * delta * n_b * n_a / n

    def compute(self) -> Any:
        """A record with ``mean``, ``standard_error_of_mean`` and ``standard_deviation``."""
        var = self.m2.value / self.count.value
        std = var ** 0.5
        return Statistics(mean=self.mean.value, standard_error_of_mean=std / self.count.value ** 0.5,
                          standard_deviation=std)


class Accuracy(Average):
    """Fraction of correct predictions: ``update(logits=..., labels=...)`` (argmax of logits,
    or ``logits > threshold`` for binary predictions with the same rank as labels).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> acc = nnx.metrics.Accuracy()
        >>> acc.update(logits=jnp.array([[0.1, 0.9], [0.8, 0.2]]), labels=jnp.array([1, 1]))
        >>> float(acc.compute())
        0.5
        >>> binary = nnx.metrics.Accuracy(threshold=0.5)
        >>> binary.update(logits=jnp.array([0.2, 0.9]), labels=jnp.array([0, 0]))
        >>> float(binary.compute())
        0.5
    """

    def __init__(self, threshold: float | None = None, argname: str = "values"):
        if threshold is not None and not isinstance(threshold, float):
            raise TypeError(f"Expected threshold to be a float, got {type(threshold)} (Accuracy)")
        super().__init__(argname=argname)
        self.threshold = threshold

    def update(self, *, logits: Any, labels: Any, mask: Any = None,  # type: ignore[override]
               **_: Any) -> None:
        """Accumulate ``predictions == labels`` (argmax of ``logits`` over the last axis; with a
        threshold, ``logits >= threshold`` against ``labels > 0``); ``mask`` leaves out entries."""
        shapes = f"(Accuracy.update: logits {tuple(logits.shape)}, labels {tuple(labels.shape)})"
        if self.threshold is not None:
            if logits.ndim != labels.ndim:
                raise ValueError("For binary classification, expected logits.ndim==labels.ndim, "
                                 f"got {logits.ndim} and {labels.ndim} {shapes}")
        elif logits.ndim != labels.ndim + 1:
            raise ValueError("For multi-class classification, expected logits.ndim==labels.ndim+1, "
                             f"got {logits.ndim} and {labels.ndim} {shapes}")
        if labels.dtype in (jnp.dtype("int64"), jnp.dtype("int32")):
            labels = labels.astype(jnp.int32)
        else:
            raise ValueError(f"Expected labels.dtype==jnp.int32, got {labels.dtype} {shapes}")
        if self.threshold is not None:
            correct = (logits >= self.threshold) == (labels > 0)
        else:
            correct = logits.argmax(axis=-1) == labels
        super().update(mask=mask, **{self.argname: correct})


class MultiMetric(Metric):
    """Several named metrics updated together: ``update(**kwargs)`` passes all keyword
    arguments to each; ``compute()`` returns a dict.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> metrics = nnx.MultiMetric(accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average('loss'))
        >>> logits, labels = jnp.array([[0.1, 0.9], [0.8, 0.2]]), jnp.array([1, 1])
        >>> metrics.update(logits=logits, labels=labels, loss=jnp.array(0.5))
        >>> {k: float(v) for k, v in metrics.compute().items()}
        {'accuracy': 0.5, 'loss': 0.5}
    """

    def __init__(self, **metrics: Metric):
        self._metric_names = tuple(metrics)
        for name, m in metrics.items():
            setattr(self, name, m)

    def reset(self) -> None:
        """Reset every metric."""
        for name in self._metric_names:
            getattr(self, name).reset()

    def update(self, **updates: Any) -> None:
        """Update every metric with the same keyword arguments; ``mask`` (an array, or a dict
        ``{metric_name: mask}``) is passed only where given."""
        mask = updates.pop("mask", None)
        for name in self._metric_names:
            m = mask.get(name) if isinstance(mask, dict) else mask
            extra = {} if m is None else {"mask": m}
            getattr(self, name).update(**updates, **extra)

    def compute(self) -> dict[str, Any]:
        """``{name: metric.compute()}``."""
        return {name: getattr(self, name).compute() for name in self._metric_names}
