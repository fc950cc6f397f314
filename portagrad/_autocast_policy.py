"""The autocast op policy: which ops run in the lower precision, which in float32, which in the
widest input type, per device type, as PyTorch 2.13 registers them.

Names are PyTorch's ATen op names (``cross_entropy_loss``, ``linalg_vecdot``); the op entry
points of portagrad name the ATen op they stand for when they ask :mod:`portagrad._autocast`.
The ``cpu`` table is PyTorch's ``AutocastCPU`` registration; every other device type
(``opencl`` and plugin devices) uses PyTorch's shared GPU lists (``AT_FORALL_LOWER_PRECISION_FP``,
``AT_FORALL_FP32``, ``AT_FORALL_FP32_SET_OPT_DTYPE``, ``AT_FORALL_PROMOTE`` in
``aten/src/ATen/autocast_mode.h``, the policy of ``AutocastCUDA``, ``AutocastXPU`` and
``AutocastPrivateUse1``). Ops not in a table run in their inputs' types (ordinary type
promotion applies).
"""
from __future__ import annotations

__all__ = ["LOWER", "FP32", "FP32_SET_OPT_DTYPE", "PROMOTE", "BANNED", "CPU_POLICY", "GPU_POLICY",
           "policy_for"]

#: cast floating inputs (not float64) to the region's dtype
LOWER = "lower_precision_fp"
#: cast floating inputs (not float64) to float32
FP32 = "fp32"
#: run in float32 by passing ``dtype=float32`` unless the call gave a dtype (softmax, sum ...);
#: ``norm``'s fp32_append_dtype policy has the same effect and is listed here
FP32_SET_OPT_DTYPE = "fp32_set_opt_dtype"
#: cast floating inputs to the widest floating type among them (float64 ignored)
PROMOTE = "promote"
#: refuses to run under autocast (``binary_cross_entropy`` on GPU device types)
BANNED = "banned"


def _table(**lists: str) -> dict[str, str]:
    table: dict[str, str] = {}
    for policy, names in lists.items():
        for name in names.split():
            table[name] = policy
    return table


CPU_POLICY: dict[str, str] = _table(
    lower_precision_fp="""
        conv1d conv2d conv3d bmm mm linalg_vecdot baddbmm addmm _addmm_activation addbmm linear
        _convolution matmul conv_tbc mkldnn_rnn_layer conv_transpose1d conv_transpose2d
        conv_transpose3d prelu scaled_dot_product_attention _native_multi_head_attention""",
    fp32="""
        avg_pool3d binary_cross_entropy grid_sampler polar prod quantile nanquantile stft cdist
        grid_sampler_2d _grid_sampler_2d_cpu_fallback grid_sampler_3d trace view_as_complex
        cholesky cholesky_inverse cholesky_solve inverse lu_solve orgqr ormqr pinverse max_pool3d
        max_unpool2d max_unpool3d adaptive_avg_pool3d reflection_pad1d reflection_pad2d
        replication_pad1d replication_pad2d replication_pad3d mse_loss cosine_embedding_loss
        nll_loss nll_loss2d hinge_embedding_loss poisson_nll_loss smooth_l1_loss
        cross_entropy_loss l1_loss huber_loss margin_ranking_loss soft_margin_loss
        triplet_margin_loss multi_margin_loss ctc_loss kl_div multilabel_margin_loss
        binary_cross_entropy_with_logits fft_fft fft_ifft fft_fft2 fft_ifft2 fft_fftn fft_ifftn
        fft_rfft fft_irfft fft_rfft2 fft_irfft2 fft_rfftn fft_irfftn fft_hfft fft_ihfft linalg_cond
        linalg_matrix_rank linalg_solve linalg_cholesky linalg_svdvals linalg_eigvals
        linalg_eigvalsh linalg_inv linalg_householder_product linalg_tensorinv linalg_tensorsolve
        fake_quantize_per_tensor_affine geqrf _lu_with_info qr svd triangular_solve
        fractional_max_pool2d fractional_max_pool3d adaptive_max_pool3d
        multilabel_margin_loss_forward linalg_qr linalg_cholesky_ex linalg_svd linalg_eig
        linalg_eigh linalg_lstsq linalg_inv_ex""",
    promote="stack cat index_copy",
)

GPU_POLICY: dict[str, str] = _table(
    lower_precision_fp="""
        _convolution conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d
        conv_transpose3d convolution prelu addmm addmv addr matmul einsum mm mv linalg_vecdot
        linear addbmm baddbmm bmm chain_matmul linalg_multi_dot _thnn_fused_lstm_cell
        _thnn_fused_gru_cell lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell
        _scaled_dot_product_flash_attention scaled_dot_product_attention""",
    fp32="""
        acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow
        softplus layer_norm native_layer_norm group_norm frobenius_norm nuclear_norm
        cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d
        hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss
        margin_ranking_loss multilabel_margin_loss soft_margin_loss triplet_margin_loss
        multi_margin_loss binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp
        upsample_nearest1d _upsample_nearest_exact1d upsample_nearest2d _upsample_nearest_exact2d
        upsample_nearest3d _upsample_nearest_exact3d upsample_linear1d upsample_bilinear2d
        _upsample_bilinear2d_aa upsample_trilinear3d upsample_bicubic2d _upsample_bicubic2d_aa""",
    fp32_set_opt_dtype="""
        prod softmax log_softmax cumprod cumsum linalg_vector_norm linalg_matrix_norm sum norm""",
    # cat and stack: listed with the promote ops by torch's amp documentation for CUDA (their
    # own type promotion gives the same result)
    promote="addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot "
            "scatter_add cat stack",
    banned="binary_cross_entropy",
)
# Composites in PyTorch whose steps are matmuls (mm, bmm: lower precision on every device
# type), each one op in portagrad that would otherwise run whole in its inputs' type
for _name in ("einsum", "linalg_multi_dot", "chain_matmul", "tensordot", "linalg_matrix_power"):
    CPU_POLICY.setdefault(_name, LOWER)
GPU_POLICY.setdefault("linalg_matrix_power", LOWER)
# Recurrent layers. PyTorch's CPU LSTM runs each layer as mkldnn_rnn_layer (lower precision, in
# the list above; oneDNN is in every standard build), so a whole LSTM comes out in the lower
# type; its GRU and RNN are composites whose linears are cast (the RNN's tanh/relu then keeps
# bfloat16, the GRU's blend with the float32 hidden state gives float32), and portagrad's
# steps are cast the same way, so those are not listed. On GPUs PyTorch's cuDNN RNN kernel
# (_cudnn_rnn, whose autocast wrapper casts input, hidden state and weights) runs all four
# kinds in 16 bits; its wrapper always picks float16, here the region's dtype is used (a bfloat16
# region runs its RNN in bfloat16).
CPU_POLICY["lstm"] = LOWER
for _name in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
    GPU_POLICY[_name] = LOWER
# cross_entropy_loss is a composite in PyTorch (log_softmax, fp32_set_opt_dtype, then nll_loss,
# fp32), one op in portagrad: running it in float32 gives the composite's result and dtype
GPU_POLICY["cross_entropy_loss"] = FP32


def policy_for(device_type: str) -> dict[str, str]:
    """The op table of ``device_type``: PyTorch's CPU list on ``cpu``, its GPU lists elsewhere."""
    return CPU_POLICY if device_type == "cpu" else GPU_POLICY
