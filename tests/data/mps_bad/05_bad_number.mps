NAME T
ROWS
 N obj
 L c1
COLUMNS
 x obj 1 c1 1
 y obj 1 c1 1.5.2
ENDATA
