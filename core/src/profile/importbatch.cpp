#include "memx/profile/importbatch.h"

#include <iterator>

namespace memx {

template<typename T> static void moveAppend(std::vector<T> &to, std::vector<T> &from)
{
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

void ImportBatch::append(ImportBatch other)
{
    moveAppend(models, other.models);
    moveAppend(clusters, other.clusters);
    moveAppend(profiles, other.profiles);
    moveAppend(runs, other.runs);
    moveAppend(network, other.network);
    moveAppend(warnings, other.warnings);
}

} // namespace memx
