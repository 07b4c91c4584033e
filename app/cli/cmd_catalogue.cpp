#include "command.h"

#include "memx/cluster/gpuspec.h"
#include "memx/io/formats.h"

#include <iomanip>
#include <iostream>
#include <sstream>

namespace memx::cli {
namespace {

const char *kUsage = R"(Usage: memx catalogue [DEVICE] [--vendor NAME] [--json]

Lists the built-in GPU catalogue: memory, bandwidth, dense BF16/FP16 peak, scale-up link.
"-" marks a figure the vendor does not publish (unknown, never guessed); "*" marks an entry
whose figures are unverified. With DEVICE (id or alias), prints that device in full with the
source of every figure.

Options:
  --vendor NAME    only this vendor's devices
  --json           print JSON (memx.catalogue/1)
)";

std::string fmt(const std::optional<double> &v, int precision = 0)
{
    if (!v)
        return "-";
    std::ostringstream s;
    s << std::fixed << std::setprecision(precision) << *v;
    return s.str();
}

int run(const std::vector<std::string> &argv)
{
    Args args(argv, {"vendor"}, {"json"});
    const Catalogue &cat = builtinCatalogue();
    if (!args.positional().empty()) {
        const GpuSpec *d = cat.find(args.positional().front());
        if (!d) {
            std::string hint;
            for (const std::string &s : cat.suggest(args.positional().front()))
                hint += (hint.empty() ? " Did you mean: " : ", ") + s;
            std::cerr << "memx catalogue: no device \"" << args.positional().front() << "\"." << hint << "\n";
            return Failure;
        }
        if (args.has("json")) {
            std::cout << toJson(*d).dump(2) << "\n";
            return Ok;
        }
        std::cout << d->vendor << " " << d->name << " (" << d->id << ")" << (d->verified ? "" : "  [unverified]")
                  << "\n"
                  << "  memory           " << fmt(d->memoryGiB, 1) << " GiB\n"
                  << "  memory bandwidth " << fmt(d->memoryBandwidthGBps) << " GB/s\n"
                  << "  dense BF16       " << fmt(d->denseBf16Tflops, 1) << " TFLOP/s"
                  << (d->bf16Supported ? "" : " (no BF16)") << "\n"
                  << "  dense FP16       " << fmt(d->denseFp16Tflops, 1) << " TFLOP/s\n"
                  << "  dense FP8        " << fmt(d->denseFp8Tflops, 1) << " TFLOP/s"
                  << (d->denseFp8Tflops ? "" : " (no FP8 training)") << "\n"
                  << "  scale-up         " << toString(d->scaleUpKind) << " (" << toString(d->scaleUpTopology) << "), "
                  << fmt(d->scaleUpPerDirectionGBps) << " GB/s per direction\n"
                  << "  devices/package  " << d->devicesPerPackage << "\n"
                  << "  NIC              " << fmt(d->nicGbps) << " Gb/s " << d->nicDescription << "\n";
        if (!d->notes.empty())
            std::cout << "  notes            " << d->notes << "\n";
        for (const auto &[k, v] : d->sources)
            std::cout << "  source " << k << ": " << v << "\n";
        return Ok;
    }
    std::vector<GpuSpec> list;
    for (const GpuSpec &d : cat.devices())
        if (!args.value("vendor") || d.vendor == *args.value("vendor"))
            list.push_back(d);
    if (args.has("json")) {
        std::cout << toJson(Catalogue(list)).dump(2) << "\n";
        return Ok;
    }
    std::cout << std::left << std::setw(16) << "ID" << std::setw(10) << "VENDOR" << std::setw(24) << "NAME"
              << std::right << std::setw(8) << "MEM GiB" << std::setw(9) << "HBM GB/s" << std::setw(9) << "BF16 TF"
              << std::setw(9) << "FP16 TF" << std::setw(9) << "FP8 TF"
              << "  SCALE-UP\n";
    for (const GpuSpec &d : list) {
        std::string name = d.name + (d.verified ? "" : " *");
        std::cout << std::left << std::setw(16) << d.id << std::setw(10) << d.vendor << std::setw(24)
                  << name.substr(0, 23) << std::right << std::setw(8) << fmt(d.memoryGiB, 1) << std::setw(9)
                  << fmt(d.memoryBandwidthGBps) << std::setw(9) << fmt(d.denseBf16Tflops, 1) << std::setw(9)
                  << fmt(d.denseFp16Tflops, 1) << std::setw(9) << fmt(d.denseFp8Tflops, 1) << "  "
                  << toString(d.scaleUpKind) << " " << fmt(d.scaleUpPerDirectionGBps) << " GB/s\n";
    }
    std::cout << list.size() << " devices. '-' unknown, '*' unverified figures. 'memx catalogue ID' for sources.\n";
    return Ok;
}

CommandRegistration reg({"catalogue", "list the built-in GPU catalogue", kUsage, &run});

} // namespace
} // namespace memx::cli
