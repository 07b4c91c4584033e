// Fixture for the core_floor_order_refuses_* tests: a concern folder that stands on no floor.
#include "memx/util/diagnostic.h"
