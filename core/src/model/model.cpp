#include "memx/model/model.h"

namespace memx {

const char *toString(Normalization v)
{
    return v == Normalization::RMSNorm ? "RMSNorm" : "LayerNorm";
}
const char *toString(PositionEmbedding v)
{
    return v == PositionEmbedding::Rope ? "rope" : "learned";
}
const char *toString(Precision v)
{
    return v == Precision::FP16 ? "fp16" : "bf16";
}
const char *toString(Optimizer v)
{
    return v == Optimizer::SGD ? "sgd" : "adam";
}
const char *toString(AttentionBackend v)
{
    switch (v) {
    case AttentionBackend::Flash:
        return "flash";
    case AttentionBackend::Fused:
        return "fused";
    case AttentionBackend::Unfused:
        return "unfused";
    case AttentionBackend::Auto:
        break;
    }
    return "auto";
}

std::optional<AttentionBackend> attentionFromString(const std::string &text)
{
    for (AttentionBackend a :
         {AttentionBackend::Auto, AttentionBackend::Flash, AttentionBackend::Fused, AttentionBackend::Unfused})
        if (text == toString(a))
            return a;
    return std::nullopt;
}

static long long normSize(const ModelShape &s)
{
    return s.normalization == Normalization::RMSNorm ? 1 : 2;
}

long long Model::paramsPerLayer() const
{
    const ModelShape &s = shape;
    if (s.heads <= 0)
        return 0;
    const long long h = s.hidden, kv = kvChannels(), n = s.heads, g = s.kvGroups, f = s.ffnHidden;
    // QKV (n*kv + 2*g*kv outputs) and the output projection (n*kv -> h): 2*h*h*(1+g/n)*r.
    const long long attention = h * kv * (2 * n + 2 * g);
    const long long mlp = s.isMoe() ? 0 : (s.swiglu ? 3 : 2) * h * f;
    const long long norms = 2 * h * normSize(s);
    // MoE: the router (h x experts, no bias), the shared expert and the routed experts.
    const long long moe = s.isMoe()
        ? h * s.moe.experts + (s.swiglu ? 3 : 2) * h * s.moe.sharedExpertFfnHidden + expertParamsPerLayer()
        : 0;
    return attention + mlp + norms + moe;
}

long long Model::expertParamsPerLayer() const
{
    const ModelShape &s = shape;
    if (!s.isMoe())
        return 0;
    return static_cast<long long>(s.moe.experts) * (s.swiglu ? 3 : 2) * s.hidden * s.moe.expertFfnHidden;
}

long long Model::activeParamsPerLayer() const
{
    const ModelShape &s = shape;
    if (!s.isMoe())
        return paramsPerLayer();
    const long long oneExpert = expertParamsPerLayer() / s.moe.experts;
    return paramsPerLayer() - expertParamsPerLayer() + s.moe.topK * oneExpert;
}

long long Model::embeddingParams() const
{
    long long p = static_cast<long long>(shape.hidden) * shape.vocab;
    if (shape.positionEmbedding == PositionEmbedding::Learned)
        p += static_cast<long long>(shape.hidden) * shape.seqLength;
    return p;
}

long long Model::headParams() const
{
    long long p = normSize(shape) * shape.hidden;
    if (!shape.tiedEmbeddings)
        p += static_cast<long long>(shape.hidden) * shape.vocab;
    return p;
}

long long Model::totalParams() const
{
    return paramsPerLayer() * shape.layers + embeddingParams() + headParams();
}

long long Model::activeParams() const
{
    return activeParamsPerLayer() * shape.layers + embeddingParams() + headParams();
}

} // namespace memx
