"""Metrics: ``Average``, ``Accuracy``, ``Welford``, ``MultiMetric`` (as ``flax.nnx.metrics``);
their state is ``MetricState`` Variables, so they work inside ``nnx.jit``."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp

from ..pytreelib import Pytree
from ..variablelib import Variable

__all__ = ["MetricState", "Metric", "Average", "Accuracy", "Welford", "MultiMetric"]


class MetricState(Variable):
    """Variable type of metric accumulators.

    Example: ``nnx.state(metrics, MetricState)``.
    """


class Metric(Pytree):
    """Base class: ``update(**kwargs)``, ``compute()``, ``reset()``.

    Example: ``class MyMetric(nnx.metrics.Metric): ...``.
    """

    def reset(self) -> None:
        raise NotImplementedError

    def update(self, **kwargs: Any) -> None:
        raise NotImplementedError

    def compute(self) -> Any:
        raise NotImplementedError


class Average(Metric):
    """Running mean of the values passed as ``argname`` (default ``values``).

    Example::

        avg = nnx.metrics.Average("loss")
        avg.update(loss=fluxion.numpy.array([1.0, 3.0]))
        avg.compute()   # 2.0
    """

    def __init__(self, argname: str = "values"):
        self.argname = argname
        self.total = MetricState(jnp.array(0, dtype=jnp.float32))
        self.count = MetricState(jnp.array(0, dtype=jnp.int32))

    def reset(self) -> None:
        """Zero the accumulators."""
        self.total.value = jnp.array(0, dtype=jnp.float32)
        self.count.value = jnp.array(0, dtype=jnp.int32)

    def update(self, **kwargs: Any) -> None:
        """Add ``kwargs[argname]`` (a number or an array) to the running mean."""
        if self.argname not in kwargs:
            raise TypeError(f"Average.update: expected keyword argument {self.argname!r}")
        values = kwargs[self.argname]
        values = jnp.asarray(values)
        self.total.value = self.total.value + values.sum()
        self.count.value = self.count.value + (values.size if values.ndim else 1)

    def compute(self) -> Any:
        """The mean so far."""
        return self.total.value / self.count.value


class Welford(Metric):
    """Running mean, standard error and variance (Welford's algorithm).

    Example: ``w = nnx.metrics.Welford(); w.update(values=x); w.compute().mean``.
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
        """Merge the statistics of ``kwargs[argname]``."""
        values = jnp.asarray(kwargs[self.argname]).ravel()
        n_b = values.size
        mean_b = values.mean()
        m2_b = ((values - mean_b) ** 2).sum()
        n_a = self.count.value
        n = n_a + n_b
        delta = mean_b - self.mean.value
        self.mean.value = self.mean.value + delta * n_b / n
        self.m2.value = self.m2.value + m2_b + delta ** 2 * n_a * n_b / n
        self.count.value = n

    def compute(self) -> Any:
        """A record with ``mean``, ``standard_error_of_mean`` and ``standard_deviation``."""
        from collections import namedtuple

        stats = namedtuple("Statistics", ["mean", "standard_error_of_mean", "standard_deviation"])
        var = self.m2.value / self.count.value
        std = jnp.sqrt(var)
        return stats(self.mean.value, std / jnp.sqrt(self.count.value), std)


class Accuracy(Average):
    """Fraction of correct predictions: ``update(logits=..., labels=...)`` (argmax of logits,
    or ``logits > threshold`` for binary predictions with the same rank as labels).

    Example::

        acc = nnx.metrics.Accuracy()
        acc.update(logits=logits, labels=labels)
    """

    def __init__(self, threshold: float | None = None, argname: str = "values"):
        super().__init__(argname=argname)
        self.threshold = threshold

    def update(self, *, logits: Any, labels: Any, **_: Any) -> None:  # type: ignore[override]
        """Accumulate ``predictions == labels``."""
        if logits.ndim == labels.ndim + 1:
            if not jnp.issubdtype(labels.dtype, jnp.integer):
                raise TypeError(f"Accuracy.update: labels must be integers, got {labels.dtype}")
            preds = logits.argmax(axis=-1)
        elif logits.ndim == labels.ndim and self.threshold is not None:
            preds = logits > self.threshold
            labels = labels.astype(bool)
        else:
            raise ValueError(f"Accuracy.update: logits of shape {tuple(logits.shape)} and labels of "
                             f"shape {tuple(labels.shape)} do not match (expected logits.ndim == "
                             "labels.ndim + 1, or equal ranks with a threshold)")
        super().update(**{self.argname: preds == labels})


class MultiMetric(Metric):
    """Several named metrics updated together: ``update(**kwargs)`` passes all keyword
    arguments to each; ``compute()`` returns a dict.

    Example::

        metrics = nnx.MultiMetric(accuracy=nnx.metrics.Accuracy(),
                                  loss=nnx.metrics.Average("loss"))
        metrics.update(logits=logits, labels=labels, loss=loss)
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
        """Update every metric with the same keyword arguments."""
        for name in self._metric_names:
            getattr(self, name).update(**updates)

    def compute(self) -> dict[str, Any]:
        """``{name: metric.compute()}``."""
        return {name: getattr(self, name).compute() for name in self._metric_names}
