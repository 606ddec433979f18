// A request target as the logs and traces write it: the path, and of the
// query only the parameter names. A value may be a secret (a key someone put
// in a URL, or a guess at one); the names still tell what was asked. So may a
// stored response's id (/v1/responses/{id}: whoever holds it can read the
// response): it is written `*`.
#pragma once

#include <string>
#include <string_view>

namespace switchyard::gateway {

// `target` itself when there is nothing to leave out, else "path?a=*&b=*"
// built in `scratch` (the view is into it).
std::string_view log_target(std::string_view target, std::string& scratch);

}  // namespace switchyard::gateway
