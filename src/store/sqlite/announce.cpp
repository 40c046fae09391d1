#include "store/sqlite/announce.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "aios/files.hpp"
#include "aios/log.hpp"

namespace aios::store::sqlite {
namespace {

class AnnouncementWatch final : public Subscription {
 public:
  AnnouncementWatch(std::filesystem::path file, std::function<void()> heard)
      : file_(std::move(file)), heard_(std::move(heard)) {
    if (!stop_.valid()) throw std::system_error(errno, std::generic_category(), "eventfd");
    watch_.add(file_.parent_path(), IN_ATTRIB);  // a touch: futimens, nothing else
    thread_ = std::thread([this] { run(); });
  }
  ~AnnouncementWatch() override {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto written = ::write(stop_.get(), &one, sizeof one);
    thread_.join();
  }
  AnnouncementWatch(const AnnouncementWatch&) = delete;
  AnnouncementWatch& operator=(const AnnouncementWatch&) = delete;

 private:
  void run() {
    heard_();
    const std::string name = file_.filename().string();
    for (;;) {
      bool stopping = false;
      const auto events = watch_.wait(std::chrono::minutes(1), stop_.get(), stopping);
      if (stopping) return;
      // The directory holds the database and its journal too: only the announcement counts
      // (and an overflow, which may have hidden one).
      for (const auto& event : events) {
        if (event.name == name || (event.mask & IN_Q_OVERFLOW) != 0) {
          heard_();
          break;
        }
      }
    }
  }

  std::filesystem::path file_;
  std::function<void()> heard_;
  process::Fd stop_{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  files::DirectoryWatch watch_;
  std::thread thread_;
};

}  // namespace

std::filesystem::path announcement_file(const std::filesystem::path& database) {
  auto file = database;
  file += "-queue";
  return file;
}

void touch_announcement(const std::filesystem::path& file) {
  const process::Fd fd(::open(file.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.valid()) ::futimens(fd.get(), nullptr);
}

std::unique_ptr<Subscription> watch_announcements(const std::filesystem::path& database,
                                                  std::function<void()> heard) {
  const auto file = announcement_file(database);
  try {
    struct stat database_status {};
    const mode_t mode =
        ::stat(database.c_str(), &database_status) == 0 ? database_status.st_mode & 0666 : 0600;
    const process::Fd created(
        ::open(file.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode));
    if (!created.valid()) throw std::system_error(errno, std::generic_category(), file.string());
    return std::make_unique<AnnouncementWatch>(file, std::move(heard));
  } catch (const std::exception& error) {
    // The long polls still hear this process's own transitions; another process's (a rebind)
    // reach them only with --claim-recheck-ms.
    log::warn("STORE_LISTEN_UNAVAILABLE", {{"file", file.string()}, {"error", error.what()}});
    return nullptr;
  }
}

}  // namespace aios::store::sqlite
