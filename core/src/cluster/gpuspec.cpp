#include "memx/cluster/gpuspec.h"

#include <algorithm>
#include <cctype>

namespace memx {

const char *toString(ScaleUpKind kind)
{
    switch (kind) {
    case ScaleUpKind::NvLink:
        return "nvlink";
    case ScaleUpKind::NvSwitch:
        return "nvswitch";
    case ScaleUpKind::InfinityFabric:
        return "infinity-fabric";
    case ScaleUpKind::RoCE:
        return "roce";
    case ScaleUpKind::Hccs:
        return "hccs";
    case ScaleUpKind::MluLink:
        return "mlu-link";
    case ScaleUpKind::BLink:
        return "blink";
    case ScaleUpKind::Pcie:
        return "pcie";
    }
    return "pcie";
}

const char *toString(ScaleUpTopology topology)
{
    switch (topology) {
    case ScaleUpTopology::Switch:
        return "switch";
    case ScaleUpTopology::Mesh:
        return "mesh";
    case ScaleUpTopology::Ring:
        return "ring";
    case ScaleUpTopology::Pairs:
        return "pairs";
    case ScaleUpTopology::None:
        return "none";
    }
    return "none";
}

std::optional<double> GpuSpec::peakTflops(bool bf16) const
{
    if (bf16 && bf16Supported && denseBf16Tflops)
        return denseBf16Tflops;
    return denseFp16Tflops ? denseFp16Tflops : denseBf16Tflops;
}

double GpuSpec::memoryBytes() const
{
    return memoryGiB ? *memoryGiB * 1024.0 * 1024.0 * 1024.0 : 0.0;
}

static std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

bool GpuSpec::isNamed(const std::string &idOrAlias) const
{
    const auto same = [&](const std::string &name) {
        return std::equal(name.begin(), name.end(), idOrAlias.begin(), idOrAlias.end(),
                          [](unsigned char a, unsigned char b) { return std::tolower(a) == std::tolower(b); });
    };
    return same(id) || std::any_of(aliases.begin(), aliases.end(), same);
}

bool isValidDeviceId(const std::string &id)
{
    const auto plain = [](unsigned char c) { return std::isalnum(c) != 0; };
    return !id.empty() && plain(id.front()) && std::all_of(id.begin(), id.end(), [&](unsigned char c) {
        return plain(c) || c == '.' || c == '_' || c == '-';
    });
}

Catalogue::Catalogue(std::vector<GpuSpec> devices)
    : mDevices(std::move(devices))
{
}

const GpuSpec *Catalogue::find(const std::string &idOrAlias) const
{
    for (const GpuSpec &d : mDevices)
        if (d.isNamed(idOrAlias))
            return &d;
    return nullptr;
}

static size_t editDistance(const std::string &a, const std::string &b)
{
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::vector<std::string> Catalogue::suggest(const std::string &text, size_t max) const
{
    const std::string key = lower(text);
    std::vector<std::pair<size_t, std::string>> scored;
    for (const GpuSpec &d : mDevices) {
        size_t best = editDistance(key, lower(d.id));
        for (const std::string &a : d.aliases)
            best = std::min(best, editDistance(key, lower(a)));
        if (lower(d.id).find(key) != std::string::npos || key.find(lower(d.id)) != std::string::npos)
            best = 0;
        scored.emplace_back(best, d.id);
    }
    std::sort(scored.begin(), scored.end());
    std::vector<std::string> out;
    for (const auto &s : scored) {
        if (out.size() >= max || s.first > std::max<size_t>(4, key.size() / 2))
            break;
        out.push_back(s.second);
    }
    return out;
}

} // namespace memx
