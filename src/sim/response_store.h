// The responses a vLLM server keeps when started with
// VLLM_ENABLE_RESPONSES_API_STORE=1 (serving_responses.py's response_store
// and msg_store): each finished response by id, with its conversation's
// tokens so far, which a follow-up naming it in `previous_response_id`
// continues. Like vLLM's, it never forgets one; a restart forgets them all.
#pragma once

#include <boost/json/object.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sim/tokenizer.h"

namespace switchyard::sim {

class ResponseStore {
 public:
  struct Entry {
    boost::json::object response;  // as GET /v1/responses/{id} answers it
    std::vector<Token> context;    // its prompt and its output
  };

  void put(std::string id, Entry entry) {
    entries_.insert_or_assign(std::move(id), std::move(entry));
  }
  const Entry* find(std::string_view id) const {
    auto it = entries_.find(id);
    return it == entries_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace switchyard::sim
