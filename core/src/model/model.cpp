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
    const long long mlp = (s.swiglu ? 3 : 2) * h * f;
    const long long norms = 2 * h * normSize(s);
    return attention + mlp + norms;
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

} // namespace memx
