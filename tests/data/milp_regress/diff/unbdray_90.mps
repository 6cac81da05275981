NAME          UNBDRAY
OBJSENSE MAX
ROWS
 N  obj
 L  r0
 G  r1
 G  r2
 E  r3
 E  r4
COLUMNS
    x7  obj  4
    x3  obj  -6  r2  1
    x9  obj  -6
    x1  obj  -5
    x8  obj  2  r0  -3
    x2  obj  -3
    x0  obj  2
    x0  r3  -3
    M0  'MARKER'  'INTORG'
    x6  obj  5  r0  -2
    x6  r1  4  r4  -3
    x5  obj  -3
    x5  r1  -1  r2  4
    x4  obj  6  r3  1
    x4  r4  1
    M1  'MARKER'  'INTEND'
RHS
    B  r0  -2  r1  24
    B  r2  -10  r4  1
BOUNDS
    LI  BOUND  x7  -2
    UI  BOUND  x7  3
    LI  BOUND  x3  -5
    UI  BOUND  x3  0
    UI  BOUND  x9  3
    MI  BOUND  x9
    UI  BOUND  x1  4
    LI  BOUND  x1  -2
    UI  BOUND  x8  -3
    UI  BOUND  x2  6
    LI  BOUND  x2  -1
    PL  BOUND  x0
    LI  BOUND  x0  -5
    FR  BOUND  x6
    FR  BOUND  x5
    PL  BOUND  x4
ENDATA
