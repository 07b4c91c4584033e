// Fixture for the core_floor_order_refuses_* tests: cost (floor 4) must not include search (floor 5).
#include "memx/search/search.h"
