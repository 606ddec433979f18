#include "gateway/response_homes.h"

namespace switchyard::gateway {

void ResponseHomes::remember(std::string id, ResponseHome home) {
  if (capacity_ == 0) return;
  if (auto it = index_.find(id); it != index_.end()) {
    it->second->second = std::move(home);
    order_.splice(order_.begin(), order_, it->second);
    return;
  }
  order_.emplace_front(std::move(id), std::move(home));
  index_.emplace(order_.front().first, order_.begin());
  if (order_.size() > capacity_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
}

const ResponseHome* ResponseHomes::find(std::string_view id, std::string_view key) {
  auto it = index_.find(id);
  if (it == index_.end() || it->second->second.key != key) return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  return &it->second->second;
}

}  // namespace switchyard::gateway
