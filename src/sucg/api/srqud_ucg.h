/* Former name of <srqud/sucg.h>, kept for applications that include it */
#include "sucg.h"
