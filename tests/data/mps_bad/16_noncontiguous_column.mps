NAME T
ROWS
 N obj
 L c1
COLUMNS
 x obj 1
 y obj 1
 x c1 1
ENDATA
