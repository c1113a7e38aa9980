/**
 * Operator families for reports: the HTML report groups its 200+ rows by
 * family, and the uncovered core overloads are listed by family too.
 *
 * Note [Operator families]: the family is derived from the overload name
 * alone (reports carry names, not schemas), in this order: the exact
 * overload ("max.dim" is a reduction, "max.other" is binary), then the base
 * name ("add" of "add.Tensor", "add.out", "add_.Scalar"), then the base name
 * without the in-place underscore ("add_"), without a leading underscore
 * ("_softmax"), without "_backward"/"_forward", then `_foreach_X` as X, then
 * a few name patterns (pool, norm, pad, linalg_, fft). Anything else is
 * "other". This file is the one place the mapping lives; a unit test pins it.
 */

export const FAMILIES = [
  "pointwise-unary",
  "pointwise-binary",
  "reduction",
  "indexing",
  "normalization",
  "loss",
  "convolution",
  "linalg",
  "factory",
  "view",
  "recurrent",
  "other",
] as const;
export type Family = (typeof FAMILIES)[number];

export const FAMILY_TITLES: Readonly<Record<Family, string>> = {
  "pointwise-unary": "Pointwise unary",
  "pointwise-binary": "Pointwise binary and ternary",
  reduction: "Reductions and scans",
  indexing: "Indexing and sorting",
  normalization: "Normalization and softmax",
  loss: "Losses",
  convolution: "Convolution, pooling, padding and resampling",
  linalg: "Linear algebra",
  factory: "Factories and random numbers",
  view: "Views, copies and shape",
  recurrent: "Recurrent cells",
  other: "Other",
};

/** Names (base names or exact overloads), whitespace-separated. */
const TABLE: Readonly<Record<Family, string>> = {
  "pointwise-unary": `
    abs acos acosh angle asin asinh atan atanh bitwise_not ceil cos cosh celu deg2rad digamma elu erf
    erfc erfinv exp exp2 expm1 floor frac gelu hardsigmoid hardswish hardtanh i0 isfinite isinf isnan
    isneginf isposinf leaky_relu lgamma log log10 log1p log2 log_sigmoid logical_not logit mish
    nan_to_num neg positive rad2deg reciprocal relu relu6 round round.decimals rrelu rsqrt selu sgn
    sigmoid sign signbit silu sin sinc sinh softplus softshrink hardshrink sqrt square tan tanh
    threshold trunc clamp clamp_min clamp_max clip conj_physical frexp
  `,
  // with the activation gradients (gelu_backward, ...): pointwise over (grad, input)
  "pointwise-binary": `
    add sub rsub mul div true_divide floor_divide pow atan2 fmod remainder bitwise_and bitwise_or
    bitwise_xor bitwise_left_shift bitwise_right_shift __lshift__ __rshift__ eq ne lt le gt ge
    logical_and logical_or logical_xor maximum minimum fmax fmin max.other min.other where clamp.Tensor
    clamp_min.Tensor clamp_max.Tensor addcmul addcdiv lerp hypot copysign nextafter xlogy heaviside
    logaddexp logaddexp2 igamma igammac masked_fill prelu glu float_power gelu_backward sigmoid_backward
    tanh_backward threshold_backward elu_backward hardtanh_backward leaky_relu_backward silu_backward
    hardsigmoid_backward hardswish_backward softplus_backward log_sigmoid_backward mish_backward
    native_dropout_backward
  `,
  reduction: `
    sum mean nansum nanmean prod amax amin aminmax max min max.dim min.dim argmax argmin any all var std
    var_mean std_mean cumsum cumprod cummax cummin logcumsumexp logsumexp norm linalg_vector_norm
    count_nonzero median nanmedian mode kthvalue quantile nanquantile histc bincount unique _unique2
    unique_consecutive unique_dim dist
  `,
  indexing: `
    gather scatter scatter_add scatter_reduce index index_put _index_put_impl index_select index_add
    index_copy index_fill index_reduce masked_scatter masked_select nonzero nonzero_static take
    take_along_dim put sort argsort topk msort searchsorted bucketize embedding embedding_dense_backward
    embedding_bag embedding_renorm
  `,
  normalization: `
    softmax log_softmax softmax_backward_data log_softmax_backward_data native_batch_norm
    native_batch_norm_legit native_batch_norm_legit_no_training native_batch_norm_legit_functional
    batch_norm native_layer_norm layer_norm native_group_norm group_norm instance_norm rms_norm
    fused_rms_norm local_response_norm renorm normalize weight_norm_interface
  `,
  loss: `
    mse_loss l1_loss smooth_l1_loss huber_loss nll_loss nll_loss2d nll_loss_nd cross_entropy_loss
    binary_cross_entropy binary_cross_entropy_with_logits kl_div soft_margin_loss multi_margin_loss
    multilabel_margin_loss ctc_loss poisson_nll_loss
  `,
  convolution: `
    convolution conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d _convolution
    slow_conv2d slow_conv3d mkldnn_convolution col2im im2col grid_sampler_2d grid_sampler_3d
    grid_sampler pixel_shuffle pixel_unshuffle channel_shuffle constant_pad_nd pad
  `,
  linalg: `
    mm bmm addmm addbmm baddbmm addmv addr mv dot vdot matmul linear outer ger cdist pdist cholesky
    cholesky_solve cholesky_inverse triangular_solve tensordot einsum kron trace tril triu inverse det
    logdet slogdet _weight_int4pack_mm _weight_int8pack_mm scaled_dot_product_attention
    scaled_dot_product_fused_attention_overrideable scaled_dot_product_fused_attention_overrideable_backward
    fft_r2c fft_c2r fft_c2c
  `,
  factory: `
    empty empty_strided empty_like new_empty new_empty_strided full full_like new_full zeros zeros_like
    new_zeros ones ones_like new_ones zero fill arange linspace logspace eye scalar_tensor tensor rand
    rand_like randn randn_like randint randint_like randperm native_dropout dropout bernoulli normal
    uniform random exponential geometric cauchy log_normal multinomial poisson
  `,
  view: `
    alias as_strided as_strided_scatter view view_as reshape reshape_alias unsafe_view expand expand_as
    permute transpose t numpy_T select select_scatter slice slice_scatter diagonal diagonal_scatter
    squeeze unsqueeze split split_with_sizes unbind chunk narrow unfold flatten unflatten movedim clone
    copy to_copy copy_from copy_from_and_resize contiguous detach lift_fresh local_scalar_dense cat
    stack hstack vstack flip roll rot90 repeat repeat_interleave tile set resize resize_as view_as_real
    view_as_complex sym_size sym_stride sym_numel sym_storage_offset sym_is_contiguous conj real imag
    has_compatible_shallow_copy_type record_stream
  `,
  recurrent: `
    thnn_fused_lstm_cell thnn_fused_lstm_cell_backward_impl thnn_fused_lstm_cell_backward thnn_fused_gru_cell
    thnn_fused_gru_cell_backward lstm gru rnn_tanh rnn_relu lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell
  `,
  other: `
  `,
};

const LOOKUP: ReadonlyMap<string, Family> = (() => {
  const m = new Map<string, Family>();
  for (const fam of FAMILIES) {
    for (const name of TABLE[fam].split(/\s+/).filter((x) => x.length > 0)) {
      if (m.has(name)) throw new Error(`families: ${name} is listed twice`);
      m.set(name, fam);
    }
  }
  return m;
})();

function byPattern(base: string): Family | undefined {
  if (/pool|upsample|interpolate|reflection_pad|replication_pad|circular_pad/.test(base)) return "convolution";
  if (/^conv|convolution/.test(base)) return "convolution";
  if (/loss/.test(base)) return "loss";
  if (/_norm$|^norm_/.test(base)) return "normalization";
  if (/^linalg_|^_linalg_/.test(base)) return "linalg";
  if (/fft/.test(base)) return "other";
  return undefined;
}

/** The family of an overload name such as "add.Tensor", "add_.Scalar", "_foreach_add_.List", "max.dim". */
export function familyOf(overload: string): Family {
  const dot = overload.indexOf(".");
  const name = dot < 0 ? overload : overload.slice(0, dot);
  const suffix = dot < 0 ? "" : overload.slice(dot);
  if (name.startsWith("_foreach_")) return familyOf(`${name.slice("_foreach_".length)}${suffix}`);
  const tries: string[] = [];
  const add = (n: string) => {
    if (n.length === 0) return;
    tries.push(`${n}${suffix}`, n);
  };
  let n = name;
  add(n);
  if (n.endsWith("_") && !n.endsWith("__")) {
    n = n.slice(0, -1);
    add(n);
  }
  if (n.startsWith("_") && !n.startsWith("__")) {
    n = n.replace(/^_+/, "");
    add(n);
  }
  if (n.endsWith("_out")) {
    n = n.slice(0, -"_out".length);
    add(n);
  }
  for (const t of tries) {
    const f = LOOKUP.get(t);
    if (f) return f;
  }
  for (const tail of ["_backward", "_forward", "_backward_data"]) {
    if (n.endsWith(tail)) {
      const f = familyOf(n.slice(0, -tail.length));
      if (f !== "other") return f;
    }
  }
  return byPattern(n) ?? "other";
}
