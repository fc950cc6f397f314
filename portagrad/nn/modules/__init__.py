"""All ``nn`` layer classes."""
from .activation import *  # noqa: F403
from .batchnorm import *  # noqa: F403
from .container import *  # noqa: F403
from .conv import *  # noqa: F403
from .dropout import *  # noqa: F403
from .flatten import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .misc import *  # noqa: F403
from .module import Module
from .normalization import *  # noqa: F403
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .transformer import *  # noqa: F403
from .sparse import *  # noqa: F403
from .pixelshuffle import *  # noqa: F403
from .adaptive import *  # noqa: F403
from .linear_cross_entropy import *  # noqa: F403

# written out (not built with * from the submodules' lists) so that type checkers see the names;
# tests/test_api_surface.py checks it against the submodules
__all__ = [
    "Module", "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish",
    "Sigmoid", "Tanh", "Hardtanh", "Hardsigmoid", "Hardswish", "Softplus", "Softsign", "LogSigmoid",
    "Softmax", "LogSoftmax", "Softmin", "Threshold", "GLU", "PReLU", "Tanhshrink", "Softshrink",
    "Hardshrink", "MultiheadAttention", "RReLU", "Softmax2d", "BatchNorm1d", "BatchNorm2d",
    "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "SyncBatchNorm",
    "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d", "Sequential", "ModuleList", "ModuleDict",
    "ParameterList", "ParameterDict", "Container", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "Dropout", "Dropout1d",
    "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "Flatten", "Unflatten",
    "Identity", "Linear", "Bilinear", "LazyLinear", "L1Loss", "MSELoss", "SmoothL1Loss",
    "HuberLoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss",
    "PoissonNLLLoss", "GaussianNLLLoss", "MarginRankingLoss", "HingeEmbeddingLoss",
    "SoftMarginLoss", "CosineEmbeddingLoss", "TripletMarginLoss", "MultiLabelSoftMarginLoss",
    "MultiMarginLoss", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss", "NLLLoss2d",
    "CTCLoss", "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
    "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d",
    "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "CosineSimilarity",
    "PairwiseDistance", "ChannelShuffle", "Fold", "Unfold", "ZeroPad3d", "ConstantPad3d",
    "ReflectionPad3d", "ReplicationPad3d", "CircularPad3d", "LayerNorm", "GroupNorm", "RMSNorm",
    "LocalResponseNorm", "CrossMapLRN2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "LPPool2d",
    "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool3d",
    "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d", "FractionalMaxPool3d",
    "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "Embedding",
    "EmbeddingBag", "Transformer", "TransformerEncoder", "TransformerDecoder",
    "TransformerEncoderLayer", "TransformerDecoderLayer", "PixelShuffle", "PixelUnshuffle",
    "AdaptiveLogSoftmaxWithLoss", "LinearCrossEntropyLoss", "LinearCrossEntropyOptions"
]
