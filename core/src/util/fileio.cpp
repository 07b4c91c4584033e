#include "memx/util/fileio.h"

#include "memx/util/diagnostic.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace memx {

std::string readTextFile(const std::string &path)
{
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw LoadError(path, "", "expected a file, found a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw LoadError(path, "", std::string("cannot open file: ") + std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad())
        throw LoadError(path, "", "read error");
    return ss.str();
}

void writeFileAtomically(const std::string &path, const std::string &content)
{
    namespace fs = std::filesystem;
    const fs::path target(path);
    fs::path dir = target.parent_path();
    if (dir.empty())
        dir = ".";
    std::string tmpl = (dir / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
    int fd = ::mkstemp(tmpl.data());
    if (fd < 0)
        throw std::runtime_error(path + ": cannot create a temporary file: " + std::strerror(errno));
    auto fail = [&](const char *what) {
        const int err = errno;
        ::close(fd);
        ::unlink(tmpl.c_str());
        throw std::runtime_error(path + ": " + what + ": " + std::strerror(err));
    };
    size_t written = 0;
    while (written < content.size()) {
        ssize_t n = ::write(fd, content.data() + written, content.size() - written);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fail("write failed");
        }
        written += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0)
        fail("fsync failed");
    ::fchmod(fd, 0644);
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmpl.c_str());
        throw std::runtime_error(path + ": close failed: " + std::strerror(err));
    }
    if (::rename(tmpl.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmpl.c_str());
        throw std::runtime_error(path + ": cannot replace the file: " + std::strerror(err));
    }
    // Make the rename itself durable.
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

} // namespace memx
