#pragma once

#include <optional>
#include <string>

namespace memx {

enum class Normalization { LayerNorm, RMSNorm };
enum class PositionEmbedding { Learned, Rope };
enum class Precision { BF16, FP16 };
enum class Optimizer { Adam, SGD };
/// How attention is computed. Flash and Fused (FlashAttention, cuDNN / TE fused attention, ROCm CK
/// flash kernels) never store the s x s score, softmax and dropout-mask tensors; Unfused (Megatron's
/// "local"/"unfused" core attention) stores them. Auto resolves per device the way Megatron-LM's
/// `--attention-backend auto` does (see resolveAttention in memx/cost/costmodel.h).
enum class AttentionBackend { Auto, Flash, Fused, Unfused };

const char *toString(Normalization v);
const char *toString(PositionEmbedding v);
const char *toString(Precision v);
const char *toString(Optimizer v);
const char *toString(AttentionBackend v);
/// "auto", "flash", "fused" or "unfused"; nullopt for anything else.
std::optional<AttentionBackend> attentionFromString(const std::string &text);

/// Mixture-of-experts MLP (Megatron-LM's --num-experts, --moe-router-topk, --moe-ffn-hidden-size,
/// --moe-shared-expert-intermediate-size): every transformer layer's MLP is `experts` expert MLPs
/// of width `expertFfnHidden` behind a linear router (hidden x experts, no bias) that sends each
/// token to `topK` of them (dropless, Megatron's default), plus an always-on shared expert of
/// width `sharedExpertFfnHidden` (0: none). experts == 0: a dense model.
struct MoeShape {
    int experts = 0;
    int topK = 0;
    int expertFfnHidden = 0;
    int sharedExpertFfnHidden = 0;

    bool operator==(const MoeShape &) const = default;
};

/// Shape of a decoder-only transformer.
struct ModelShape {
    int layers = 0;
    int hidden = 0;
    int heads = 0;
    int kvGroups = 0; ///< query groups (GQA); equals heads without GQA
    int ffnHidden = 0;
    int vocab = 0;
    int seqLength = 0;
    bool swiglu = false;
    bool tiedEmbeddings = true;
    Normalization normalization = Normalization::LayerNorm;
    PositionEmbedding positionEmbedding = PositionEmbedding::Learned;
    int rotaryBase = 10000; ///< RoPE base (theta); Megatron-LM's --rotary-base, whose default is 10000
    MoeShape moe; ///< experts == 0: dense MLP of ffnHidden

    bool isMoe() const { return moe.experts > 0; }

    bool operator==(const ModelShape &) const = default;
};

struct TrainingSettings {
    int globalBatch = 0; ///< sequences per iteration
    Precision precision = Precision::BF16;
    Optimizer optimizer = Optimizer::Adam;
    AttentionBackend attention = AttentionBackend::Auto; ///< what the run uses (the export emits it)

    bool operator==(const TrainingSettings &) const = default;
};

/// A model to train: shape + training settings.
struct Model {
    std::string id;
    std::string name;
    std::string source;
    ModelShape shape;
    TrainingSettings training;

    /// Attention head dimension (kv channels) = hidden / heads.
    int kvChannels() const { return shape.heads > 0 ? shape.hidden / shape.heads : 0; }
    /// Parameters of one transformer layer (attention, MLP, biases, two norms), as
    /// Megatron-LM's theoretical_memory_usage.py counts them plus the bias terms. MoE: the
    /// router, every expert and the shared expert.
    long long paramsPerLayer() const;
    /// MoE: the routed experts' parameters of one layer (experts x one expert MLP); 0 when dense.
    /// They are split over the expert-parallel group, the rest of the layer over TP.
    long long expertParamsPerLayer() const;
    /// Parameters one token passes through in a layer: the dense layer, or with MoE the layer
    /// less the experts it is not routed to (topK of them).
    long long activeParamsPerLayer() const;
    /// Word embedding (+ learned position embedding) parameters.
    long long embeddingParams() const;
    /// Output layer parameters when embeddings are untied (0 when tied), plus the final norm.
    long long headParams() const;
    long long totalParams() const;
    /// Parameters a token passes through (totalParams for a dense model).
    long long activeParams() const;

    bool operator==(const Model &) const = default;
};

} // namespace memx
