// hiredis's reply as a RedisReply, for the two clients over hiredis (the
// gateway's asynchronous one and the keys CLI's blocking one). Private to
// tenancy/: it includes hiredis, whose flags other targets must not see.
#pragma once

#include <hiredis/hiredis.h>

#include "tenancy/redis_client.h"

namespace switchyard::tenancy {

RedisReply from_hiredis(const redisReply* reply);

}  // namespace switchyard::tenancy
