// Chat template rendering and detection (implementation pending).
#include "tokenizer/chat_template.h"
