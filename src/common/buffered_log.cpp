#include "common/buffered_log.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <utility>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

namespace switchyard {

namespace {

class BufferedStdoutSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void set_on_first_line(std::function<void()> callback) {
    std::lock_guard<std::mutex> lock(mutex_);
    on_first_line_ = std::move(callback);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    std::fwrite(line.data(), 1, line.size(), stdout);
    if (!std::exchange(unflushed_, true) && on_first_line_) on_first_line_();
  }
  void flush_() override {
    std::fflush(stdout);
    unflushed_ = false;
  }

 private:
  bool unflushed_ = false;
  std::function<void()> on_first_line_;
};

// The sink use_buffered_stdout_log() installed, for BufferedLogHook.
std::weak_ptr<BufferedStdoutSink> installed_sink;

void set_on_first_line(std::function<void()> callback) {
  if (auto sink = installed_sink.lock()) sink->set_on_first_line(std::move(callback));
}

}  // namespace

void use_buffered_stdout_log() {
  auto sink = std::make_shared<BufferedStdoutSink>();
  installed_sink = sink;
  auto logger = std::make_shared<spdlog::logger>("", std::move(sink));
  logger->set_level(spdlog::default_logger()->level());
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

BufferedLogHook::BufferedLogHook(std::function<void()> on_first_line) {
  set_on_first_line(std::move(on_first_line));
}

BufferedLogHook::~BufferedLogHook() {
  set_on_first_line(nullptr);
}

}  // namespace switchyard
