#include "tenancy/key_limits.h"

#include <cctype>

namespace switchyard::tenancy {

bool valid_key_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (unsigned char c : name)
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.' && c != '@') return false;
  return true;
}

}  // namespace switchyard::tenancy
