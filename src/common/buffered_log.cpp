#include "common/buffered_log.h"

#include <cstdio>
#include <memory>
#include <mutex>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

namespace switchyard {

namespace {

class BufferedStdoutSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  void flush_() override { std::fflush(stdout); }
};

}  // namespace

void use_buffered_stdout_log() {
  auto logger = std::make_shared<spdlog::logger>("", std::make_shared<BufferedStdoutSink>());
  logger->set_level(spdlog::default_logger()->level());
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace switchyard
