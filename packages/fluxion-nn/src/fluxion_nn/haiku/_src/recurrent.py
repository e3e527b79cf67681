"""``haiku._src.recurrent``: RNN cores and unrolls."""

from .._attention import DeepRNN  # noqa: F401
from .._layers import (  # noqa: F401
    GRU,
    LSTM,
    LSTMState,
    RNNCore,
    VanillaRNN,
    dynamic_unroll,
    static_unroll,
)
