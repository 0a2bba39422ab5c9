#include "popper/binding.hpp"
