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
from .._layers import _add_batch as add_batch  # noqa: F401
from .._recurrent import (  # noqa: F401
    Conv1DLSTM,
    Conv2DLSTM,
    Conv3DLSTM,
    ConvNDLSTM,
    IdentityCore,
    ResetCore,
    deep_rnn_with_skip_connections,
)
