NAME          EQKNAP
ROWS
 N  obj
 E  r0
COLUMNS
    M0  'MARKER'  'INTORG'
    x4  obj  16
    x4  r0  24
    x1  obj  -2
    x1  r0  24
    x8  obj  3
    x8  r0  31
    x0  obj  -2
    x0  r0  -31
    x5  obj  8
    x5  r0  37
    x2  obj  -4
    x2  r0  28
    x6  obj  24
    x6  r0  10
    x7  obj  28
    x7  r0  10
    x3  obj  10
    x3  r0  26
    M1  'MARKER'  'INTEND'
    x9  obj  1
    x9  r0  1
RHS
    RHS  r0  398
BOUNDS
    UP  BND  x4  3
    LO  BND  x1  -3
    UP  BND  x1  2
    LO  BND  x8  -2
    UP  BND  x8  0
    UP  BND  x0  2
    UP  BND  x5  8
    UP  BND  x2  5
    UP  BND  x6  5
    LO  BND  x6  0
    LO  BND  x7  -1
    UP  BND  x7  14
    UP  BND  x3  15
    LO  BND  x3  0
    UP  BND  x9  4
ENDATA
